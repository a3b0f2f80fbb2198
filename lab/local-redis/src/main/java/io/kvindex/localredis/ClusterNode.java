package io.kvindex.localredis;

/** One node of a {@link LocalRedisCluster}. Thread-safe, like {@link RedisNode}. */
public interface ClusterNode extends RedisNode {
  /** A node's current role in the cluster. */
  enum Role {
    PRIMARY,
    REPLICA
  }

  /** The node's cluster id (40 hex characters); it survives {@link #restart()}. */
  String nodeId();

  /** The node's current role, asked of the running server; fails if it does not answer. */
  Role role();
}
