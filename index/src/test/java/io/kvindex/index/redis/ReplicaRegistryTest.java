package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.PrefixIndex;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The ingester replica registry: one live process per replica name. */
@UsesRedis
class ReplicaRegistryTest {

  @Test
  void registerReplica_aSecondProcessUnderALiveName_isRefused(RedisStandalone redis) {
    String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
    try (RedisConnector one = connect(uri);
        RedisConnector two = connect(uri);
        PrefixIndex first = PrefixIndex.builder().indexName("registry").redis(one).build();
        PrefixIndex second = PrefixIndex.builder().indexName("registry").redis(two).build()) {
      assertThat(first.registerReplica("a", Duration.ofMinutes(1))).isEqualTo(1);
      assertThat(first.registerReplica("a", Duration.ofMinutes(1))).as("itself again").isEqualTo(1);

      assertThatThrownBy(() -> second.registerReplica("a", Duration.ofMinutes(1)))
          .isInstanceOf(ReplicaConflictException.class)
          .hasMessageContaining("--replica-id");
      assertThat(second.registerReplica("b", Duration.ofMinutes(1))).isEqualTo(2);
      second.deregisterReplica("a"); // not its own: left alone
      assertThat(first.registerReplica("a", Duration.ofMinutes(1))).isEqualTo(2);
      first.deregisterReplica("a");
      assertThat(second.registerReplica("a", Duration.ofMinutes(1))).as("free again").isEqualTo(2);
    }
  }

  private static RedisConnector connect(String uri) {
    return RedisConnector.builder().uri(uri).meterRegistry(new SimpleMeterRegistry()).build();
  }
}
