package io.kvindex.localredis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("cluster")
class LocalRedisClusterTest {

  @Test
  void start_formsHealthyClusterServingEveryShard() {
    long started = System.nanoTime();
    try (LocalRedisCluster cluster = LocalRedisCluster.start()) {
      long millis = (System.nanoTime() - started) / 1_000_000;
      System.out.println("3x1 cluster started in " + millis + " ms");
      assertThat(cluster.nodes()).hasSize(6);
      assertThat(cluster.primaries()).hasSize(3);
      assertThat(cluster.replicas()).hasSize(3);

      RedisClusterClient client =
          RedisClusterClient.create(cluster.seedUris().stream().map(RedisURI::create).toList());
      try (StatefulRedisClusterConnection<String, String> conn = client.connect()) {
        RedisAdvancedClusterCommands<String, String> sync = conn.sync();
        Set<Integer> ports = new HashSet<>();
        for (String key : List.of("a", "b", "c", "d", "e", "f", "g", "h")) {
          int slot = SlotHash.getSlot(key);
          assertThat(sync.clusterKeyslot(key)).isEqualTo(slot);
          ports.add(cluster.ownerOf(slot).port());
          sync.set(key, "v-" + key);
          assertThat(sync.get(key)).isEqualTo("v-" + key);
        }
        assertThat(ports).hasSize(3);
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  @Test
  void migrateSlot_movesTheKeysAndTheSlotToAnotherPrimary() {
    try (LocalRedisCluster cluster = LocalRedisCluster.builder().replicasPerPrimary(0).start()) {
      int slot = SlotHash.getSlot("{moved}");
      ClusterNode from = cluster.ownerOf(slot);
      ClusterNode to =
          cluster.primaries().stream().filter(n -> n != from).findFirst().orElseThrow();
      RedisClusterClient client =
          RedisClusterClient.create(cluster.seedUris().stream().map(RedisURI::create).toList());
      try (StatefulRedisClusterConnection<String, String> conn = client.connect()) {
        RedisAdvancedClusterCommands<String, String> sync = conn.sync();
        for (int i = 0; i < 25; i++) {
          sync.hset("{moved}:" + i, "f", "v" + i);
        }
        LocalRedisCluster.SlotMigration moved = cluster.migrateSlot(slot, to);

        assertThat(moved.keys()).isEqualTo(25);
        assertThat(moved.migrateCalls()).isEqualTo(3);
        assertThat(cluster.ownerOf(slot)).isSameAs(to);
        for (int i = 0; i < 25; i++) {
          assertThat(sync.hget("{moved}:" + i, "f")).isEqualTo("v" + i);
        }
        assertThatThrownBy(() -> cluster.migrateSlot(slot, to))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("already serves");
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  @Test
  void builder_rejectsTooFewPrimaries() {
    assertThatThrownBy(() -> LocalRedisCluster.builder().primaries(2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least 3");
  }

  @Test
  void killPrimary_replicaTakesOverAndRestartedNodeRejoinsAsReplica() {
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder().nodeTimeout(Duration.ofMillis(1000)).start()) {
      int slot = SlotHash.getSlot("victim");
      ClusterNode primary = cluster.ownerOf(slot);
      int port = primary.port();
      primary.kill();
      assertThat(primary.isRunning()).isFalse();

      cluster.awaitHealthy(Duration.ofSeconds(20));
      ClusterNode promoted = cluster.ownerOf(slot);
      assertThat(promoted).isNotSameAs(primary);
      assertThat(promoted.role()).isEqualTo(ClusterNode.Role.PRIMARY);
      assertThat(cluster.primaries()).hasSize(3);

      primary.restart();
      assertThat(primary.port()).isEqualTo(port);
      cluster.awaitHealthy(Duration.ofSeconds(20));
      assertThat(primary.role()).isEqualTo(ClusterNode.Role.REPLICA);
      assertThat(cluster.replicas()).hasSize(3);

      RedisClusterClient client =
          RedisClusterClient.create(cluster.seedUris().stream().map(RedisURI::create).toList());
      try (StatefulRedisClusterConnection<String, String> conn = client.connect()) {
        conn.sync().set("victim", "survived");
        assertThat(conn.sync().get("victim")).isEqualTo("survived");
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  @Test
  void pause_excludedFromHealthUntilResumedAndCloseLeavesNothing() {
    LocalRedisCluster cluster = LocalRedisCluster.builder().replicasPerPrimary(0).start();
    List<ClusterNode> nodes = cluster.nodes();
    try {
      ClusterNode node = nodes.get(1);
      node.pause();
      assertThat(node.isPaused()).isTrue();
      assertThat(cluster.primaries()).hasSize(2);
      node.resume();
      cluster.awaitHealthy(Duration.ofSeconds(10));
      assertThat(cluster.primaries()).hasSize(3);
    } finally {
      cluster.close();
    }
    for (ClusterNode node : nodes) {
      assertThat(ProcessHandle.of(node.pid()).map(ProcessHandle::isAlive))
          .isNotEqualTo(Optional.of(true));
      assertThat(Files.exists(node.logFile().getParent())).isFalse();
    }
  }
}
