package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.WireEra;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One memory budget bounds the whole process: rings far larger than it are rebuilt exactly, window
 * by window and one stream at a time, after a start and after Redis loses the index; a batch no
 * window can hold costs its stream a purge.
 */
@UsesRedis
class BoundedMemoryTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final long BUDGET = 1 << 20;
  private Rig rig;
  private Fleet fleet;

  @AfterEach
  void tearDown() {
    if (rig != null) {
      rig.close();
    }
    if (fleet != null) {
      fleet.close();
    }
  }

  private static double counted(Ingester i, String name, String tag, String value) {
    return i.meterRegistry().find(name).tag(tag, value).counters().stream()
        .mapToDouble(c -> c.count())
        .sum();
  }

  private static double gauge(Ingester i, String name) {
    return i.meterRegistry().get(name).gauge().value();
  }

  private static void flushAll(RedisStandalone redis) {
    RedisClient client = RedisClient.create(redis.uri());
    try (var c = client.connect()) {
      c.sync().flushall();
    } finally {
      client.shutdown();
    }
  }

  /**
   * Three pods whose rings hold several windows of history each, one replay slot, a 1 MiB budget
   * (64 KiB windows): every stream is rebuilt exactly at start, and again after a FLUSHALL, while
   * the budget's peak stays within it.
   */
  @Test
  void ringsLargerThanTheBudget_rebuiltExactlyInWindows_atStartAndAfterFlushAll(
      @Fresh RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(3);
    fleet.traffic(400); // history in the rings before any ingester runs
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            b -> b.memoryBudgetBytes(BUDGET).maxConcurrentReplays(1).maxReplayBytes(64 << 10));
    awaitAllExact();
    assertThat(counted(ingester, "kvindex.ingester.replays", "outcome", "cut"))
        .as("history read window by window")
        .isGreaterThanOrEqualTo(3);
    assertThat(
            ingester.meterRegistry().get("kvindex.ingester.replay.waits").functionCounter().count())
        .as("streams waited for the one replay slot")
        .isGreaterThanOrEqualTo(1);

    double cutBefore = counted(ingester, "kvindex.ingester.replays", "outcome", "cut");
    flushAll(redis);
    fleet.traffic(5);
    awaitAllExact();
    assertThat(counted(ingester, "kvindex.ingester.replays", "outcome", "cut"))
        .as("rebuilt window by window again")
        .isGreaterThan(cutBefore);
    assertThat(gauge(ingester, "kvindex.ingester.memory.peak"))
        .as("the most the budget counted")
        .isPositive()
        .isLessThanOrEqualTo(BUDGET);
    assertThat(counted(ingester, "kvindex.ingester.purges", "reason", "replay_too_large")).isZero();
    Await.until(
        WAIT,
        "every byte given back once nothing waits",
        () ->
            gauge(ingester, "kvindex.ingester.replays.running") == 0 && usedReplay(ingester) == 0);
  }

  /**
   * A quiet pod whose ring has wrapped (its oldest batch is past 0), read by a catch-up into
   * windows smaller than the ring: the gap before the ring's oldest batch cannot be covered, so the
   * stream goes on from that batch (what only older batches stored is missing: an under-report,
   * never a false positive), and each later window is read as its live socket is found deaf,
   * without the stream failing on the socket it closed.
   */
  @Test
  void wrappedRingLargerThanAWindow_quietStreamRebuiltFromTheRingsOldestBatch(
      @Fresh RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(2, 42, b -> b.replayBufferSteps(200));
    fleet.traffic(500); // each ring holds only its last 200 batches; no live batch follows
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            b -> b.memoryBudgetBytes(BUDGET).maxConcurrentReplays(1).maxReplayBytes(64 << 10));
    for (SimulatedPod p : fleet.pods()) {
      rig.awaitCaughtUp(p, WAIT);
      assertThat(rig.falsePositives(p, fleet.everHeld())).isEmpty();
      assertThat(rig.held(p.name(), p.cachedBlocks(0, "GPU")))
          .as("%s rebuilt from its ring", p.name())
          .isNotEmpty();
    }
    assertThat(counted(ingester, "kvindex.ingester.errors", "operation", "stream"))
        .as("no stream failed")
        .isZero();
    assertThat(counted(ingester, "kvindex.ingester.replays", "outcome", "cut"))
        .as("history read window by window")
        .isGreaterThanOrEqualTo(2);
  }

  private static double usedReplay(Ingester i) {
    return i.meterRegistry()
        .get("kvindex.ingester.memory.used")
        .tag("use", "replay")
        .gauge()
        .value();
  }

  private void awaitAllExact() {
    for (SimulatedPod p : fleet.pods()) {
      rig.awaitCaughtUp(p, WAIT);
      rig.awaitEqual(p, fleet.everHeld(), WAIT);
    }
  }

  /**
   * A live batch larger than the stream may hold waiting, and larger than any replay window: it is
   * dropped, its replay is too large, and the stream is purged and goes on after it; the pod is
   * exact again once its cache is.
   */
  @Test
  void batchLargerThanAnyWindow_droppedThenPurgedAndTheStreamGoesOn(RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            b ->
                b.memoryBudgetBytes(BUDGET)
                    .maxPendingBytes(64 << 10)
                    .maxReplayBytes(64 << 10)
                    .maxMessageBytes(1 << 20));
    SimulatedPod pod = fleet.pod(0);
    rig.warmUp(fleet, pod);
    fleet.traffic(pod, 5);
    rig.awaitCaughtUp(pod, WAIT);

    List<Long> hashes = new ArrayList<>();
    for (long h = 1; h <= 20_000; h++) {
      hashes.add(h << 20); // 160 KB decoded: more than a window of 64 KiB
    }
    pod.inject(
        0,
        KvEventEncoder.of(WireEra.V0_22)
            .encode(KvEventBatch.of(0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0)));
    fleet.traffic(pod, 5);

    rig.awaitCaughtUp(pod, WAIT);
    assertThat(counted(ingester, "kvindex.ingester.batches.dropped", "reason", "stream_bound"))
        .isGreaterThanOrEqualTo(1);
    assertThat(counted(ingester, "kvindex.ingester.replays", "outcome", "too_large"))
        .isGreaterThanOrEqualTo(1);
    assertThat(counted(ingester, "kvindex.ingester.purges", "reason", "replay_too_large"))
        .isEqualTo(1);
    assertThat(rig.falsePositives(pod, fleet.everHeld())).isEmpty();
    pod.resetPrefixCache();
    fleet.traffic(pod, 3);
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
  }

  /**
   * A gap whose batches each fit a replay window, but not two of them: the replay for the gap
   * starts one batch early (the last one applied, to compare the ring's copy with it), and that
   * copy must not take the room the gap's first batch needs, or the replay is cut before the gap,
   * asked again and cut again, for ever. The gap is repaired from the ring, window by window,
   * without a purge.
   */
  @Test
  void gapWhoseBatchesFitAWindowOnlyOneAtATime_repairedFromTheRingWithoutAPurge(
      RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            b -> b.memoryBudgetBytes(BUDGET).maxReplayBytes(64 << 10).maxMessageBytes(1 << 20));
    SimulatedPod pod = fleet.pod(0);
    rig.warmUp(fleet, pod);
    rig.awaitCaughtUp(pod, WAIT);

    pod.inject(0, storing(1)); // about 40 KB decoded: one fits a 64 KiB window, two do not
    rig.awaitCaughtUp(pod, WAIT);
    pod.faults().dropFraction(1.0);
    pod.inject(0, storing(2)); // lost live, kept in the ring
    pod.inject(0, storing(3));
    pod.faults().clear();
    pod.inject(0, storing(4)); // heard: the gap is 2..3

    rig.awaitCaughtUp(pod, Duration.ofSeconds(30));
    assertThat(ingester.metrics().total("kvindex.ingester.gaps"))
        .as("the gap was seen")
        .isPositive();
    assertThat(ingester.metrics().total("kvindex.ingester.purges"))
        .as("the ring covered the gap: nothing purged")
        .isZero();
    assertThat(rig.held(pod.name(), Set.of(storedHash(2, 0), storedHash(3, 4_999))))
        .as("the gap's blocks, applied from the ring")
        .containsExactlyInAnyOrder(storedHash(2, 0), storedHash(3, 4_999));
  }

  /** A batch storing 5 000 blocks of its own, {@code k << 32} on. */
  private static byte[] storing(int k) {
    List<Long> hashes = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      hashes.add(storedHash(k, i));
    }
    return KvEventEncoder.of(WireEra.V0_22)
        .encode(KvEventBatch.of(0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0));
  }

  private static long storedHash(int k, int i) {
    return ((long) k << 32) + i;
  }
}
