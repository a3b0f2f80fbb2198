package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The ingester on a Redis Cluster given by seed nodes: every script stays in one slot. */
@UsesRedisCluster
class ClusterTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void twoReplicasOnACluster_indexEqualsGroundTruth(RedisCluster redis) {
    try (Rig rig = new Rig(redis, 2);
        Fleet fleet = Fleet.start(4)) {
      assertThat(rig.redisUri()).contains(",");
      Ingester a = rig.start("a", fleet.specs("engine"));
      Ingester b = rig.start("b", fleet.specs("engine"));
      Await.until(
          WAIT, "two streams each", () -> a.workers().size() == 2 && b.workers().size() == 2);
      fleet.pods().forEach(p -> rig.warmUp(fleet, p));
      fleet.traffic(10);
      fleet.pod(2).resetPrefixCache();
      fleet.traffic(3);
      for (SimulatedPod pod : fleet.pods()) {
        rig.awaitCaughtUp(pod, WAIT);
        rig.awaitEqual(pod, fleet.everHeld(), WAIT);
      }
      assertThat(a.metrics().total("kvindex.ingester.errors")).isZero();
      assertThat(b.metrics().total("kvindex.ingester.errors")).isZero();
    }
  }
}
