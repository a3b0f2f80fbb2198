package io.kvindex.testing;

import io.kvindex.localredis.RedisNode;
import io.lettuce.core.RedisURI;

/**
 * A standalone Redis server for a test; resolve it as a test or lifecycle method parameter under
 * {@link UsesRedis}. Thread-safe.
 */
public interface RedisStandalone extends RedisTopology {
  /** A new copy of the server's URI, for {@code RedisClient.create(redis.uri())}. */
  RedisURI uri();

  /**
   * The server's process, to kill, pause or restart it. Ask for the server with {@link Fresh} when
   * you change it. Aborts (skips) the test when the server is not a process this run started.
   */
  RedisNode node();
}
