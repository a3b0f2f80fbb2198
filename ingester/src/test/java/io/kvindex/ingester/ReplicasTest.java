package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.Lease;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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

  /**
   * A replica that joins while another holds every stream takes the streams the other sheds as soon
   * as they are given up, not at its own next round: before, each stayed unowned until then, a
   * third of the lease TTL later (two thirds when that round met a slow call), its pod's removals
   * unapplied meanwhile. Rounds are 5 s apart here and b joins half a round after a's: a's round
   * that sheds comes 2.5 s before b's second.
   */
  @Test
  void aReplicaThatJoins_takesTheStreamsAnotherShedsBeforeItsOwnNextRound() {
    fleet = Fleet.start(8);
    Duration ttl = Duration.ofSeconds(15);
    Ingester a = rig.start("a", fleet.specs("engine"), c -> c.leaseTtl(ttl));
    Await.until(WAIT, "a owns all 8", () -> owned(a) == 8);
    java.util.concurrent.locks.LockSupport.parkNanos(ttl.dividedBy(6).toNanos());

    Ingester b = rig.start("b", fleet.specs("engine"), c -> c.leaseTtl(ttl));
    Await.until(
        WAIT,
        () -> "4 streams each, got " + owned(a) + " and " + owned(b),
        () -> owned(a) == 4 && owned(b) == 4);
    assertThat(b.metrics().total("kvindex.ingester.coordination.rounds"))
        .as("b's rounds when it held its share: its first, which found every stream held")
        .isEqualTo(1);
    assertThat(a.metrics().value("kvindex.ingester.leases.moved", "how", "shed")).isEqualTo(4);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(5);
    awaitAllEqual();
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

    rig.gate(a).close(); // frozen just before its next write, renewing nothing
    fleet.traffic(fleet.pod(0), 1); // a's worker now holds a batch it will try to write
    Ingester b = rig.start("b", fleet.specs("engine"));
    Await.until(WAIT, "b took both over", () -> owned(b) == 2);
    fleet.traffic(3);
    awaitAllEqual();

    rig.gate(a).open();
    Await.until(
        WAIT, "a's late write refused", () -> a.metrics().total("kvindex.ingester.fenced") >= 1);
    Await.until(WAIT, "a holds nothing", () -> a.workers().isEmpty());
    fleet.traffic(2);
    awaitAllEqual();
    // a is a live replica again: the coordinators may hand it one of the two streams back.
    Await.until(WAIT, "both streams owned", () -> owned(a) + owned(b) == 2);
  }

  /**
   * A replica stopped between two calls of a long batch (a prefill in calls of 16 blocks), its
   * stream taken over by one that packs batches in calls of 128: the new owner goes on from the
   * block the former one stopped at, or applies the batch alone when it would have made it part of
   * a run (before, it went on at its own chunk of the former's index: blocks skipped), and the
   * former one is fenced when it wakes.
   */
  @ParameterizedTest(name = "{0} keys, a prefill of {1} blocks")
  @CsvSource({"engine, 300", "token, 300", "engine, 60", "token, 60"})
  void pausedBetweenTwoCallsOfABatch_newOwnerWithOtherChunksGoesOnWhereItStopped(
      String keys, int blocks) {
    fleet = Fleet.start(1, 42, c -> c.capacityBlocks(512));
    SimulatedPod pod = fleet.pod(0);
    Ingester a = rig.start("a", fleet.specs(keys), c -> c.applyChunkBlocks(16));
    Await.until(WAIT, "a owns the stream", () -> owned(a) == 1);
    rig.warmUp(fleet, pod);
    fleet.traffic(3);
    awaitAllEqual(keys);

    rig.gate(a).closeBetweenChunks();
    Random random = new Random(7);
    int[] prompt = random.ints(blocks * Fleet.BLOCK + 1, 0, 32_000).toArray();
    fleet.serve(pod, 0, InferenceRequest.of(prompt, new int[] {1}));
    Await.until(WAIT, "a stopped between two calls of the batch", rig.gate(a)::closed);
    Ingester b = rig.start("b", fleet.specs(keys));
    Await.until(WAIT, "b took the stream over", () -> owned(b) == 1);
    fleet.traffic(3);
    awaitAllEqual(keys);

    rig.gate(a).open();
    Await.until(
        WAIT, "a's late call refused", () -> a.metrics().total("kvindex.ingester.fenced") >= 1);
    assertThat(b.metrics().total("kvindex.ingester.purges")).isZero();
  }

  private void awaitAllEqual(String keys) {
    if (keys.equals("engine")) {
      awaitAllEqual();
      return;
    }
    for (SimulatedPod pod : fleet.pods()) {
      rig.awaitCaughtUp(pod, WAIT);
      rig.awaitEqualInTokenMode(pod, fleet.everHeld(), WAIT);
    }
  }
}
