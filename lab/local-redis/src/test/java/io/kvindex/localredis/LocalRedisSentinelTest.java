package io.kvindex.localredis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class LocalRedisSentinelTest {

  @Test
  void failover_promotesTheReplicaWithTheData() throws Exception {
    try (LocalRedisSentinel set = LocalRedisSentinel.builder().sentinels(3).start()) {
      RedisNode old = set.primary();
      assertThat(old.port()).isEqualTo(set.dataNodes().get(0).port());
      assertThat(set.uri().toString())
          .startsWith("redis-sentinel://127.0.0.1:")
          .endsWith("#kvindex");
      Resp.call(old.port(), Duration.ofSeconds(2), "SET", "k", "v");
      set.awaitReplicated(Duration.ofSeconds(10));

      set.failover();
      RedisNode promoted = set.awaitPrimaryOtherThan(old, Duration.ofSeconds(60));

      assertThat(promoted.port()).isEqualTo(set.dataNodes().get(1).port());
      assertThat(Resp.call(promoted.port(), Duration.ofSeconds(2), "GET", "k")).isEqualTo("v");
      RedisClient client = RedisClient.create(RedisURI.create(set.uri().toString()));
      try (StatefulRedisConnection<String, String> viaSentinel = client.connect()) {
        assertThat(viaSentinel.sync().get("k")).isEqualTo("v");
        assertThat(viaSentinel.sync().role().get(0).toString()).contains("master");
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }
}
