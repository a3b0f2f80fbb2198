package io.kvindex.testing;

import io.lettuce.core.RedisURI;
import java.util.List;

/**
 * The Redis a test runs against: a standalone server ({@link RedisStandalone}) or a cluster ({@link
 * RedisCluster}), provided by {@link RedisExtension}. Thread-safe.
 */
public interface RedisTopology {
  /** Whether this is a Redis Cluster. */
  boolean isCluster();

  /** New copies of the URIs to connect to: the server's, or the cluster's seeds. */
  List<RedisURI> uris();

  /** Where the servers come from, for messages (local processes, external, Testcontainers). */
  String description();

  /** Whether fault handles are available, that is the servers are processes this run started. */
  boolean supportsFaults();

  /**
   * Deletes every key on every primary ({@code FLUSHALL}). The extension does this before a test
   * first receives a shared topology.
   */
  void flushAll();
}
