package io.kvindex.ingester;

import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/**
 * {@link IndexPort} over the shared {@link PrefixIndex} (one per key mode, same Redis and index
 * name) plus the replica registry, a sorted set scored by expiry under its own hash tag.
 * Thread-safe.
 */
final class RedisIndexPort implements IndexPort {
  private static final LuaScript REGISTRY =
      LuaScript.of(
          "ingester-registry",
          String.join(
              "\n",
              "local t = redis.call('TIME')",
              "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
              "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)",
              "if ARGV[2] == '-1' then",
              "  redis.call('ZREM', KEYS[1], ARGV[1])",
              "else",
              "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])",
              "  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)",
              "end",
              "return redis.call('ZCARD', KEYS[1])"));

  private static final int GC_BUDGET = PrefixIndexBuilder.DEFAULT_GC_BUDGET;

  private static final LuaScript INCARNATION =
      LuaScript.of(
          "ingester-incarnation",
          String.join(
              "\n",
              "local old = redis.call('GET', KEYS[1])",
              "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])",
              "return old"));

  private final RedisConnector connector;
  private final boolean ownsConnector;
  private final Map<KeyMode, PrefixIndex> indexes;
  private final ScriptRunner scripts;
  private final String tag;
  private final byte[] registryKey;

  RedisIndexPort(
      RedisConnector connector,
      boolean ownsConnector,
      Function<KeyMode, PrefixIndex> indexOfMode,
      String indexName,
      RetryPolicy policy) {
    this.connector = connector;
    this.ownsConnector = ownsConnector;
    this.indexes = new EnumMap<>(KeyMode.class);
    for (KeyMode m : KeyMode.values()) {
      indexes.put(m, indexOfMode.apply(m));
    }
    this.scripts = connector.scripts(policy);
    this.tag = "kvindex:v1:{" + encode(indexName) + "/ingesters}:";
    this.registryKey = (tag + "replicas").getBytes(StandardCharsets.UTF_8);
  }

  /** Connects to Redis and opens the index for both key modes. */
  static RedisIndexPort connect(IngesterConfig config, MeterRegistry registry) {
    RedisConnector connector =
        RedisConnector.builder()
            .uri(config.redisUri())
            .commandTimeout(config.redisTimeout())
            .meterRegistry(registry)
            .build();
    try {
      return new RedisIndexPort(
          connector,
          true,
          mode -> builder(config, mode).redis(connector).build(),
          config.indexName(),
          writePolicy(config));
    } catch (RuntimeException e) {
      connector.close();
      throw e;
    }
  }

  static PrefixIndexBuilder builder(IngesterConfig config, KeyMode mode) {
    return PrefixIndex.builder()
        .indexName(config.indexName())
        .groups(config.indexGroups())
        .defaultKeyMode(mode)
        .podTtl(config.podLivenessTtl())
        .departedRetention(config.departedRetention())
        .writePolicy(writePolicy(config));
  }

  static RetryPolicy writePolicy(IngesterConfig config) {
    return RetryPolicy.builder().totalBudget(config.redisRetryBudget()).build();
  }

  private PrefixIndex index(String keyMode) {
    return indexes.get(KeyMode.valueOf(keyMode.toUpperCase(Locale.ROOT)));
  }

  private static io.kvindex.index.StreamId id(StreamId s) {
    return new io.kvindex.index.StreamId(s.model(), s.pod(), s.dpRank());
  }

  @Override
  public Applied apply(StreamId stream, long seq, long token, KvEventBatch batch) {
    ApplyResult r = index(stream.keyMode()).apply(id(stream), seq, token, batch);
    return Applied.valueOf(r.status().name());
  }

  @Override
  public Purged purge(StreamId stream, long token, boolean resetWatermark) {
    PurgeStatus s =
        index(stream.keyMode())
            .purge(
                id(stream),
                token,
                resetWatermark ? PurgeMode.RESET_WATERMARK : PurgeMode.KEEP_WATERMARK);
    switch (s) {
      case PURGED:
        return Purged.DONE;
      case FENCED:
        return Purged.FENCED;
      default:
        return Purged.SWALLOWED;
    }
  }

  @Override
  public long watermark(StreamId stream) throws UnavailableException {
    try {
      return index(stream.keyMode()).watermark(id(stream)).orElse(-1);
    } catch (RedisUnavailableException e) {
      throw new UnavailableException("watermark of " + stream, e);
    }
  }

  @Override
  public OptionalLong acquireLease(StreamId stream, String owner, Duration ttl) {
    return index(stream.keyMode()).acquireLease(id(stream), owner, ttl);
  }

  @Override
  public boolean renewLease(StreamId stream, String owner, long token, Duration ttl) {
    return index(stream.keyMode()).renewLease(id(stream), owner, token, ttl);
  }

  @Override
  public void releaseLease(StreamId stream, String owner, long token) {
    index(stream.keyMode()).releaseLease(id(stream), owner, token);
  }

  @Override
  public boolean heartbeat(String model, String pod, Duration ttl) {
    return indexes.get(KeyMode.ENGINE).heartbeat(model, pod, ttl);
  }

  @Override
  public int registerReplica(String replica, Duration ttl) throws UnavailableException {
    return registry(replica, Long.toString(Math.max(1, ttl.toMillis())));
  }

  @Override
  public void deregisterReplica(String replica) throws UnavailableException {
    registry(replica, "-1");
  }

  private int registry(String replica, String ttlMillis) throws UnavailableException {
    try {
      RedisOutcome<Long> out =
          scripts
              .<Long>run(
                  REGISTRY,
                  ScriptOutputType.INTEGER,
                  new byte[][] {registryKey},
                  replica.getBytes(StandardCharsets.UTF_8),
                  ttlMillis.getBytes(StandardCharsets.UTF_8))
              .toCompletableFuture()
              .join();
      if (!out.isDone()) {
        throw new UnavailableException("replica registry", null);
      }
      return out.orElse(0L).intValue();
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
  }

  @Override
  public String swapIncarnation(String model, String pod, String incarnation, Duration ttl)
      throws UnavailableException {
    byte[] key =
        (tag + "incarnation:" + encode(model) + ":" + encode(pod)).getBytes(StandardCharsets.UTF_8);
    try {
      RedisOutcome<byte[]> out =
          scripts
              .<byte[]>run(
                  INCARNATION,
                  ScriptOutputType.VALUE,
                  new byte[][] {key},
                  incarnation.getBytes(StandardCharsets.UTF_8),
                  Long.toString(Math.max(1, ttl.toMillis())).getBytes(StandardCharsets.UTF_8))
              .toCompletableFuture()
              .join();
      if (!out.isDone()) {
        throw new UnavailableException("incarnation of " + pod, null);
      }
      byte[] old = out.orElse(null);
      return old == null ? null : new String(old, StandardCharsets.UTF_8);
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
  }

  @Override
  public boolean collectGarbage(int maxSteps) throws UnavailableException {
    PrefixIndex index = indexes.get(KeyMode.ENGINE);
    boolean done = true;
    try {
      for (int g = 0; g < index.groups(); g++) {
        boolean groupDone = false;
        for (int i = 0; i < maxSteps && !groupDone; i++) {
          groupDone = index.collectGarbage(g, GC_BUDGET).done();
        }
        // One bounded step per round forgets pods gone for longer than the retention.
        index.sweepDeparted(g, GC_BUDGET);
        done &= groupDone;
      }
    } catch (RedisUnavailableException e) {
      throw new UnavailableException("garbage collection", e);
    }
    return done;
  }

  @Override
  public void close() {
    indexes.values().forEach(PrefixIndex::close);
    if (ownsConnector) {
      connector.close();
    }
  }

  private static String encode(String name) {
    StringBuilder b = new StringBuilder();
    for (byte c : name.getBytes(StandardCharsets.UTF_8)) {
      if ((c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || c == '-'
          || c == '_'
          || c == '.') {
        b.append((char) c);
      } else {
        b.append('%').append(String.format("%02X", c & 0xff));
      }
    }
    return b.toString();
  }
}
