package io.kvindex.testing;

import io.kvindex.localredis.LocalRedisCluster;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * A {@link RedisCluster} backed by local processes or an external cluster; closing it ends what
 * this run started. Thread-safe.
 */
final class ClusterHandle implements RedisCluster, AutoCloseable {
  private final List<String> seeds;
  private final String description;
  private final LocalRedisCluster local;
  private RedisClusterClient client;
  private StatefulRedisClusterConnection<String, String> connection;

  ClusterHandle(List<String> seeds, String description, LocalRedisCluster local) {
    this.seeds = List.copyOf(seeds);
    this.description = description;
    this.local = local;
  }

  @Override
  public boolean isCluster() {
    return true;
  }

  @Override
  public List<RedisURI> uris() {
    return seeds.stream().map(RedisURI::create).toList();
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
  public LocalRedisCluster cluster() {
    Assumptions.assumeTrue(
        local != null, () -> "fault handles need a local cluster, but this is " + description);
    return local;
  }

  /**
   * FLUSHALL on each primary that owns slots in the topology read now: lettuce's own cluster
   * FLUSHALL also sends to a primary lost for good, which the cluster keeps in its node list.
   */
  @Override
  public synchronized void flushAll() {
    if (connection == null) {
      List<RedisURI> targets = uris();
      targets.forEach(uri -> uri.setTimeout(Duration.ofSeconds(10)));
      client = RedisClusterClient.create(targets);
      connection = client.connect();
    }
    client.refreshPartitions();
    for (RedisClusterNode node : connection.getPartitions()) {
      if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.hasNoSlots()) {
        connection.getConnection(node.getNodeId()).sync().flushall();
      }
    }
  }

  @Override
  public synchronized void close() {
    try {
      if (client != null) {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    } finally {
      if (local != null) {
        local.close();
      }
    }
  }

  @Override
  public String toString() {
    return "Redis Cluster at " + seeds + " (" + description + ")";
  }
}
