package io.kvindex.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;

@UsesRedisCluster
class RedisClusterExtensionTest {
  private RedisClusterClient client;
  private StatefulRedisClusterConnection<String, String> connection;

  @BeforeEach
  void connect(RedisCluster redis) {
    client = RedisClusterClient.create(redis.uris());
    connection = client.connect();
  }

  @AfterEach
  void shutdown() {
    connection.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
  }

  @RepeatedTest(2)
  void shared_servesAllShardsAndIsFlushedBeforeEachTest(RedisCluster redis) {
    RedisAdvancedClusterCommands<String, String> sync = connection.sync();
    assertThat(sync.dbsize()).isZero();
    Map<String, String> ownerByKey = new HashMap<>();
    for (String key : List.of("a", "b", "c", "d", "e", "f", "g", "h")) {
      ownerByKey.put(key, ownerOf(sync.clusterNodes(), sync.clusterKeyslot(key).intValue()));
      sync.set(key, "v-" + key);
    }
    assertThat(ownerByKey.values()).as("keys on every primary").containsAll(primaries(sync));
    assertThat(primaries(sync)).hasSize(3);
    for (String key : ownerByKey.keySet()) {
      assertThat(sync.get(key)).isEqualTo("v-" + key);
    }
    assertThat(redis.isCluster()).isTrue();
    if (redis.supportsFaults()) {
      assertThat(redis.cluster().nodes()).hasSize(6);
    }
  }

  /** The id of the primary whose slot ranges in a CLUSTER NODES reply cover {@code slot}. */
  private static String ownerOf(String clusterNodes, int slot) {
    for (String line : clusterNodes.split("\n")) {
      String[] f = line.trim().split(" ");
      for (int i = 8; i < f.length; i++) {
        String[] range = f[i].split("-");
        int from = Integer.parseInt(range[0]);
        int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
        if (from <= slot && slot <= to) {
          return f[0];
        }
      }
    }
    throw new AssertionError("slot " + slot + " has no owner in\n" + clusterNodes);
  }

  private static List<String> primaries(RedisAdvancedClusterCommands<String, String> sync) {
    return sync.clusterNodes()
        .lines()
        .map(line -> line.split(" "))
        .filter(f -> f[2].contains("master"))
        .map(f -> f[0])
        .toList();
  }
}
