package io.kvindex.bench;

import io.kvindex.localredis.LocalRedis;
import io.kvindex.redis.RedisConnector;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Locale;

/**
 * The standalone Redis server a benchmark runs against: a local redis-server started here (owned:
 * it may be flushed and reconfigured), or a user's server (never flushed; settings changed for a
 * measurement are restored). Gives an admin connection with a long timeout (a naive purge may hold
 * the server for seconds) and a {@link RedisConnector} for the index. Not thread-safe.
 */
final class BenchRedis implements AutoCloseable {
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(120);

  private final LocalRedis local;
  private final String uri;
  private final RedisClient client;
  private final StatefulRedisConnection<String, String> admin;
  private final RedisConnector connector;
  private final MeterRegistry meters = new SimpleMeterRegistry();

  private BenchRedis(LocalRedis local, String uri) {
    this.local = local;
    this.uri = uri;
    RedisURI redisUri = RedisURI.create(uri);
    redisUri.setTimeout(ADMIN_TIMEOUT);
    this.client = RedisClient.create(redisUri);
    this.admin = client.connect();
    this.connector =
        RedisConnector.builder()
            .uri(uri)
            .commandTimeout(Duration.ofSeconds(10))
            .meterRegistry(meters)
            .build();
  }

  /** A local server, or the user's one from the options (which must be standalone). */
  static BenchRedis open(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      String uri = options.redisUri().get().trim();
      String lower = uri.toLowerCase(Locale.ROOT);
      if (!(lower.startsWith("redis://") || lower.startsWith("rediss://")) || uri.contains(",")) {
        throw new IllegalArgumentException(
            "--redis must be one standalone server, redis://host:port or rediss://host:port; got '"
                + RedisConnector.masked(uri)
                + "'");
      }
      return new BenchRedis(null, uri);
    }
    LocalRedis local = LocalRedis.start();
    try {
      return new BenchRedis(local, local.uri().toString());
    } catch (RuntimeException e) {
      local.close();
      throw e;
    }
  }

  /** True for a server this benchmark started (it may be flushed). */
  boolean owned() {
    return local != null;
  }

  /** The server's URI (database 0). */
  String uri() {
    return uri;
  }

  /** String-codec commands with a long timeout, for setup and measurement. */
  RedisCommands<String, String> admin() {
    return admin.sync();
  }

  /** A new binary connection, for pipelined baselines; the caller closes it. */
  StatefulRedisConnection<byte[], byte[]> binaryConnection() {
    return client.connect(ByteArrayCodec.INSTANCE);
  }

  /** The total of a counter of the index or of the connector, over all its tags; 0 if none. */
  double counted(String meter) {
    return meters.find(meter).counters().stream().mapToDouble(Counter::count).sum();
  }

  /** The connector the index runs on. */
  RedisConnector connector() {
    return connector;
  }

  String version() {
    return infoField("server", "redis_version");
  }

  long usedMemory() {
    return Long.parseLong(infoField("memory", "used_memory"));
  }

  /**
   * Gives a server this benchmark started a CPU of its own until the returned placement is closed;
   * moves nothing of a user's server.
   */
  CpuPlacement ownCpu() {
    return owned()
        ? CpuPlacement.separate(local.pid())
        : CpuPlacement.unmoved("user server: not moved");
  }

  /** The process id of a server this benchmark started; -1 for a user's server. */
  long serverPid() {
    return owned() ? local.pid() : -1;
  }

  /** Where the server is, as recorded in results: the local one, or "user" (no address). */
  String describe() {
    return owned() ? "local redis-server on loopback (started by the benchmark)" : "user server";
  }

  /** Empties a server this benchmark started; does nothing to a user's server. */
  void flushIfOwned() {
    if (owned()) {
      admin().flushall();
    }
  }

  /** Deletes every key starting with {@code prefix} (SCAN + UNLINK); returns how many. */
  long deleteKeys(String prefix) {
    long deleted = 0;
    ScanArgs args = ScanArgs.Builder.matches(escapeGlob(prefix) + "*").limit(1000);
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      KeyScanCursor<String> page = admin().scan(cursor, args);
      if (!page.getKeys().isEmpty()) {
        deleted += admin().unlink(page.getKeys().toArray(new String[0]));
      }
      cursor = page;
    } while (!cursor.isFinished());
    return deleted;
  }

  private static String escapeGlob(String text) {
    return text.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
  }

  private String infoField(String section, String field) {
    for (String line : admin().info(section).split("\r?\n")) {
      if (line.startsWith(field + ":")) {
        return line.substring(field.length() + 1).trim();
      }
    }
    throw new IllegalStateException("INFO " + section + " has no " + field);
  }

  @Override
  public void close() {
    connector.close();
    admin.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    if (local != null) {
      local.close();
    }
  }
}
