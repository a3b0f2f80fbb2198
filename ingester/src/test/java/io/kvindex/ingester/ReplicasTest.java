package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.Lease;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Several ingester replicas sharing a fleet through leases. */
@UsesRedis
class ReplicasTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private Rig rig;
  private Fleet fleet;

  @BeforeEach
  void setUp(RedisStandalone redis, TestInfo test) {
    org.slf4j.LoggerFactory.getLogger(ReplicasTest.class).info("=== {}", test.getDisplayName());
    rig = new Rig(redis);
  }

  @AfterEach
  void tearDown() {
    rig.close();
    if (fleet != null) {
      fleet.close();
    }
  }

  private static int owned(Ingester i) {
    return (int)
        i.workers().values().stream()
            .filter(w -> w.status().state() == StreamStatus.State.RUNNING)
            .count();
  }

  private void awaitAllEqual() {
    for (SimulatedPod pod : fleet.pods()) {
      rig.awaitCaughtUp(pod, WAIT);
      rig.awaitEqual(pod, fleet.everHeld(), WAIT);
    }
  }

  /**
   * Leases name their owner: a second live process under a replica id already in use would pass the
   * first one's fencing, so it is refused at start, saying what to do, and the first one keeps its
   * streams. A replica that crashed and comes back under its id gets it once its entry expired.
   */
  @Test
  void duplicateReplicaId_isRefusedWhileTheOtherLives() {
    fleet = Fleet.start(2);
    Ingester a = rig.start("a", fleet.specs("engine"));
    Await.until(WAIT, "a owns both streams", () -> owned(a) == 2);

    assertThatThrownBy(() -> rig.start("a", fleet.specs("engine")))
        .isInstanceOf(ReplicaConflictException.class)
        .hasMessageContaining("replica id 'a' is registered by another live ingester")
        .hasMessageContaining("--replica-id");
    fleet.traffic(5);
    awaitAllEqual();
    assertThat(owned(a)).isEqualTo(2);

    a.kill(); // a crash: its registry entry and leases are left to expire
    Ingester again = rig.start("a", fleet.specs("engine"));
    Await.until(WAIT, "the restarted 'a' owns both streams", () -> owned(again) == 2);
  }

  @Test
  void twoReplicas_shareFairlyAndTheSurvivorTakesOverAKilledOne() {
    fleet = Fleet.start(8);
    Ingester a = rig.start("a", fleet.specs("engine"));
    Ingester b = rig.start("b", fleet.specs("engine"));
    Await.until(
        WAIT,
        () -> "4 streams each, got " + owned(a) + " and " + owned(b),
        () -> owned(a) == 4 && owned(b) == 4);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    awaitAllEqual();

    a.kill(); // no lease released: b must wait for them to expire
    fleet.traffic(5); // nobody listens to a's pods meanwhile: b replays from the watermarks
    Await.until(WAIT, () -> "b owns all, has " + owned(b), () -> owned(b) == 8);
    fleet.traffic(3);
    awaitAllEqual();

    assertThat(b.metrics().value("kvindex.ingester.leases.moved", "how", "acquired")).isEqualTo(8);
    assertThat(b.metrics().total("kvindex.ingester.purges")).isZero();
  }

  @Test
  void close_releasesLeasesAtOnce() {
    fleet = Fleet.start(2);
    Ingester a = rig.start("a", fleet.specs("engine"), c -> c.leaseTtl(Duration.ofSeconds(6)));
    Ingester b = rig.start("b", fleet.specs("engine"), c -> c.leaseTtl(Duration.ofSeconds(6)));
    Await.until(WAIT, "one stream each", () -> owned(a) == 1 && owned(b) == 1);

    List<StreamId> held = List.copyOf(a.workers().keySet());
    a.close();
    // Released at once: another owner may take them now, long before their 6 s TTL.
    for (StreamId s : held) {
      Lease probe = rig.index().acquireLease(s, "probe", Duration.ofSeconds(1)).orElseThrow();
      assertThat(rig.index().releaseLease(s, probe)).isTrue();
    }
    Await.until(WAIT, "b owns both", () -> owned(b) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(5);
    awaitAllEqual();
  }

  @Test
  void pausedFormerOwner_isFencedWhenItWakes() {
    fleet = Fleet.start(2);
    Ingester a = rig.start("a", fleet.specs("engine"));
    Await.until(WAIT, "a owns both", () -> owned(a) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(5);
    awaitAllEqual();

    a.pause(); // frozen just before its next write, renewing nothing
    fleet.traffic(fleet.pod(0), 1); // a's worker now holds a batch it will try to write
    Ingester b = rig.start("b", fleet.specs("engine"));
    Await.until(WAIT, "b took both over", () -> owned(b) == 2);
    fleet.traffic(3);
    awaitAllEqual();

    a.resume();
    Await.until(
        WAIT, "a's late write refused", () -> a.metrics().total("kvindex.ingester.fenced") >= 1);
    Await.until(WAIT, "a holds nothing", () -> a.workers().isEmpty());
    fleet.traffic(2);
    awaitAllEqual();
    // a is a live replica again: the coordinators may hand it one of the two streams back.
    Await.until(WAIT, "both streams owned", () -> owned(a) + owned(b) == 2);
  }
}
