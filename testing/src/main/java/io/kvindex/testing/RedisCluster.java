package io.kvindex.testing;

import io.kvindex.localredis.LocalRedisCluster;

/**
 * A Redis Cluster for a test; resolve it as a test or lifecycle method parameter under {@link
 * UsesRedisCluster}. {@link #uris()} are the seeds for {@code RedisClusterClient.create(uris)}.
 * Thread-safe.
 */
public interface RedisCluster extends RedisTopology {
  /**
   * The cluster's processes, to find a slot's owner and kill, pause or restart nodes. Ask for the
   * cluster with {@link Fresh} when you change it. Aborts (skips) the test when the cluster is not
   * made of processes this run started.
   */
  LocalRedisCluster cluster();
}
