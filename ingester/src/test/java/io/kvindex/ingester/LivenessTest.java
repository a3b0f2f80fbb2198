package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A pod whose event channel dies (its publisher gone, no reset of the index) stops being credited:
 * its liveness follows its event channel, not only its {@code /metrics}, and a channel silent past
 * the unreachable bound purges its stream.
 */
@UsesRedis
class LivenessTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private Rig rig;
  private Fleet fleet;

  @BeforeEach
  void setUp(RedisStandalone redis) {
    rig = new Rig(redis);
  }

  @AfterEach
  void tearDown() {
    rig.close();
    if (fleet != null) {
      fleet.close();
    }
  }

  /**
   * Pod-0's {@code /metrics} URL is pod-1's, which keeps answering after pod-0's engine is gone:
   * the metrics say nothing of pod-0's channel, so only the channel can stop its liveness.
   */
  @Test
  void deadChannel_podLeftToExpire_thoughItsMetricsAnswer() {
    fleet = Fleet.start(2);
    PodSpec pod0 = Fleet.spec(fleet.pod(0), "engine").withMetricsUrl(metricsOf(1));
    Ingester ingester =
        start(
            pod0,
            b -> b.podLivenessTtl(Duration.ofSeconds(3)).unreachableAfter(Duration.ofMinutes(5)));
    Set<Long> held = warm();

    fleet.pod(0).close(); // its publisher and replay sockets gone; its "metrics" still answer

    Await.until(WAIT, "pod-0 no longer credited", () -> rig.held("pod-0", held).isEmpty());
    assertThat(ingester.metrics().total("kvindex.ingester.purges")).as("nothing purged").isZero();
    rig.awaitEqual(fleet.pod(1), fleet.everHeld(), WAIT);
  }

  /**
   * Pod-0 has no {@code /metrics}: once its channel has been silent past the unreachable bound, its
   * stream purges. Pod-1, idle all the while with its connection up, is kept.
   */
  @Test
  void deadChannel_withoutMetrics_purgedPastTheUnreachableBound() {
    fleet = Fleet.start(2);
    PodSpec pod0 = Fleet.spec(fleet.pod(0), "engine").withMetricsUrl(null);
    Ingester ingester =
        start(
            pod0,
            b -> b.podLivenessTtl(Duration.ofMinutes(5)).unreachableAfter(Duration.ofSeconds(1)));
    Set<Long> held = warm();

    fleet.pod(0).close();

    Await.until(WAIT, "pod-0 purged", () -> rig.held("pod-0", held).isEmpty());
    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "event_channel_lost"))
        .isEqualTo(1.0);
    rig.awaitEqual(fleet.pod(1), fleet.everHeld(), WAIT);
  }

  private String metricsOf(int pod) {
    return fleet.pod(pod).httpAddress() + "/metrics";
  }

  private Ingester start(PodSpec pod0, UnaryOperator<IngesterConfig.Builder> tweak) {
    Ingester ingester = rig.start("r1", List.of(pod0, Fleet.spec(fleet.pod(1), "engine")), tweak);
    Await.until(
        WAIT,
        "both streams owned",
        () ->
            ingester.workers().values().stream()
                    .filter(w -> w.status().state() == StreamStatus.State.RUNNING)
                    .count()
                == 2);
    return ingester;
  }

  /** Traffic on both pods until the index holds it; returns pod-0's blocks. */
  private Set<Long> warm() {
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    for (int i = 0; i < 2; i++) {
      rig.awaitCaughtUp(fleet.pod(i), WAIT);
      rig.awaitEqual(fleet.pod(i), fleet.everHeld(), WAIT);
    }
    return new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));
  }
}
