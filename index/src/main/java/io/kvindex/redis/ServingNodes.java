package io.kvindex.redis;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode.NodeFlag;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;

/**
 * The nodes a connector's data lives on, for the commands a cluster does not route by key.
 *
 * <p>A cluster keeps a primary that died for good in its node list (flagged failed, and without
 * slots once a replica has taken them over) until an operator makes every node forget it, and
 * lettuce's own node-wide commands (its cluster-wide SCAN, SCRIPT LOAD, FLUSHALL) still send to it:
 * each of them then fails for as long as the node stays dead. Here a node is chosen by what it
 * serves, not by its place in the list. Thread-safe.
 */
interface ServingNodes {

  /** The primaries that own slots now, after reading the topology again. */
  CompletionStage<List<RedisConnector.Node>> primaries();

  /**
   * Every node of the topology as last read that can answer: the primaries that own slots and the
   * replicas, none flagged failing, failed, without an address or in a handshake. Reads no
   * topology, so it fits within one attempt's timeout.
   */
  CompletionStage<List<RedisClusterAsyncCommands<byte[], byte[]>>> reachable();

  /** The one server (standalone, or the primary Sentinel names) of a non-cluster connection. */
  static ServingNodes single(String address, RedisClusterAsyncCommands<byte[], byte[]> commands) {
    return new Single(new RedisConnector.Node(address, commands));
  }

  /** The nodes of a cluster connection, from its client's topology. */
  static ServingNodes cluster(
      RedisClusterClient client, StatefulRedisClusterConnection<byte[], byte[]> connection) {
    return new Cluster(client, connection);
  }

  /** A server on its own. */
  record Single(RedisConnector.Node node) implements ServingNodes {
    @Override
    public CompletionStage<List<RedisConnector.Node>> primaries() {
      return CompletableFuture.completedFuture(List.of(node));
    }

    @Override
    public CompletionStage<List<RedisClusterAsyncCommands<byte[], byte[]>>> reachable() {
      return CompletableFuture.completedFuture(List.of(node.commands()));
    }
  }

  /** A cluster's nodes, by their flags and slots in the client's topology. */
  record Cluster(
      RedisClusterClient client, StatefulRedisClusterConnection<byte[], byte[]> connection)
      implements ServingNodes {

    @Override
    public CompletionStage<List<RedisConnector.Node>> primaries() {
      return client.refreshPartitionsAsync().thenCompose(refreshed -> nodes(Cluster::ownsSlots));
    }

    @Override
    public CompletionStage<List<RedisClusterAsyncCommands<byte[], byte[]>>> reachable() {
      return nodes(Cluster::answers)
          .thenApply(nodes -> nodes.stream().map(RedisConnector.Node::commands).toList());
    }

    /** A connection to each node of the topology that {@code chosen} accepts, in its order. */
    private CompletableFuture<List<RedisConnector.Node>> nodes(Predicate<RedisClusterNode> chosen) {
      List<CompletableFuture<RedisConnector.Node>> nodes = new ArrayList<>();
      for (RedisClusterNode n : connection.getPartitions()) {
        if (chosen.test(n)) {
          String address = n.getUri().getHost() + ":" + n.getUri().getPort();
          nodes.add(
              connection
                  .getConnectionAsync(n.getNodeId())
                  .thenApply(c -> new RedisConnector.Node(address, c.async())));
        }
      }
      return CompletableFuture.allOf(nodes.toArray(new CompletableFuture<?>[0]))
          .thenApply(all -> nodes.stream().map(CompletableFuture::join).toList());
    }

    private static boolean ownsSlots(RedisClusterNode n) {
      return n.is(NodeFlag.UPSTREAM) && !n.hasNoSlots();
    }

    private static boolean answers(RedisClusterNode n) {
      return (n.is(NodeFlag.REPLICA) || ownsSlots(n))
          && !n.is(NodeFlag.FAIL)
          && !n.is(NodeFlag.EVENTUAL_FAIL)
          && !n.is(NodeFlag.NOADDR)
          && !n.is(NodeFlag.HANDSHAKE);
    }
  }
}
