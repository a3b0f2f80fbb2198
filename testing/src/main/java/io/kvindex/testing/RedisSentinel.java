package io.kvindex.testing;

import io.kvindex.localredis.LocalRedisSentinel;

/**
 * A Sentinel-monitored primary with one replica and one Sentinel, for a test; resolve it as a test
 * or {@code @BeforeEach} parameter under {@link UsesRedis}. Each test gets its own set (failover
 * tests change roles), started for it and ended after it; tests asking for one are skipped when the
 * run uses external servers or no redis-server binary can run. Thread-safe.
 */
public interface RedisSentinel {
  /** {@code redis-sentinel://127.0.0.1:<port>#<master>}, for {@code RedisConnector.connect}. */
  String uri();

  /** The processes, to find and kill the primary and wait for its replica to take over. */
  LocalRedisSentinel sentinel();
}
