package io.kvindex.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** One abstract test body run against both topologies through {@link RedisTopology}. */
class TopologyContractTest {

  abstract static class Contract {
    abstract boolean expectCluster();

    @Test
    void topology_matchesTagAndStoresKeys(RedisTopology redis) {
      assertThat(redis.isCluster()).isEqualTo(expectCluster());
      assertThat(setAndGet(redis, "contract-key", "value")).isEqualTo("value");
    }

    private static String setAndGet(RedisTopology redis, String key, String value) {
      if (redis.isCluster()) {
        RedisClusterClient client = RedisClusterClient.create(redis.uris());
        try (StatefulRedisClusterConnection<String, String> conn = client.connect()) {
          conn.sync().set(key, value);
          return conn.sync().get(key);
        } finally {
          client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
      }
      RedisClient client = RedisClient.create(redis.uris().get(0));
      try (StatefulRedisConnection<String, String> conn = client.connect()) {
        conn.sync().set(key, value);
        return conn.sync().get(key);
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  @Nested
  @UsesRedis
  class Standalone extends Contract {
    @Override
    boolean expectCluster() {
      return false;
    }
  }

  @Nested
  @UsesRedisCluster
  class Cluster extends Contract {
    @Override
    boolean expectCluster() {
      return true;
    }
  }
}
