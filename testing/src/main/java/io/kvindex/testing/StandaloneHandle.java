package io.kvindex.testing;

import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.RedisNode;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * A {@link RedisStandalone} backed by a local process, a container or an external server; closing
 * it ends what this run started. Thread-safe.
 */
final class StandaloneHandle implements RedisStandalone, AutoCloseable {
  private final String uri;
  private final String description;
  private final LocalRedis local;
  private final AutoCloseable owned;
  private RedisClient client;
  private StatefulRedisConnection<String, String> connection;

  StandaloneHandle(String uri, String description, LocalRedis local, AutoCloseable owned) {
    this.uri = uri;
    this.description = description;
    this.local = local;
    this.owned = owned;
  }

  @Override
  public boolean isCluster() {
    return false;
  }

  @Override
  public RedisURI uri() {
    return RedisURI.create(uri);
  }

  @Override
  public List<RedisURI> uris() {
    return List.of(uri());
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public boolean supportsFaults() {
    return local != null;
  }

  @Override
  public RedisNode node() {
    Assumptions.assumeTrue(
        local != null, () -> "fault handles need a local redis-server, but this is " + description);
    return local;
  }

  @Override
  public synchronized void flushAll() {
    if (connection == null) {
      client = RedisClient.create();
      RedisURI target = uri();
      target.setTimeout(Duration.ofSeconds(10));
      connection = client.connect(target);
    }
    connection.sync().flushall();
  }

  @Override
  public synchronized void close() {
    try {
      if (client != null) {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    } finally {
      closeOwned();
    }
  }

  private void closeOwned() {
    if (owned == null) {
      return;
    }
    try {
      owned.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while ending " + description, e);
    } catch (Exception e) {
      throw new IllegalStateException("cannot end " + description + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "standalone Redis at " + uri + " (" + description + ")";
  }
}
