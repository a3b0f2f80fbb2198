package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An ingester keeps the index exact when Redis loses it, when a pod sleeps through that, and when a
 * stream moves to a new owner while its pod is quiet.
 */
@UsesRedis
class IndexLossTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
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

  private static void flushAll(RedisStandalone redis) {
    RedisClient client = RedisClient.create(redis.uri());
    try (var c = client.connect()) {
      c.sync().flushall();
    } finally {
      client.shutdown();
    }
  }

  private static int running(Ingester i) {
    return (int)
        i.workers().values().stream()
            .filter(
                w -> w.status().state() == io.kvindex.ingester.stream.StreamStatus.State.RUNNING)
            .count();
  }

  @Test
  void flushAll_streamsStartAgainFromTheirRingsAndASleepingPodStaysEmpty(
      @Fresh RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(2);
    Ingester ingester = rig.start("r1", fleet.specs("engine"));
    Await.until(WAIT, "both owned", () -> running(ingester) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    for (SimulatedPod p : fleet.pods()) {
      rig.awaitCaughtUp(p, WAIT);
      rig.awaitEqual(p, fleet.everHeld(), WAIT);
    }
    Set<Long> slept = new HashSet<>(fleet.pod(1).cachedBlocks(0, "GPU"));
    fleet.pod(1).sleep(1);
    Await.until(WAIT, "the sleeping pod purged", () -> rig.held("pod-1", slept).isEmpty());

    flushAll(
        redis); // Redis loses the index; pod-1's ring still holds what it stored before sleeping

    Await.until(
        WAIT,
        "the loss noticed",
        () ->
            ingester.meterRegistry().find("kvindex.index.resets").counters().stream()
                    .mapToDouble(c -> c.count())
                    .sum()
                >= 1);
    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    fleet.traffic(fleet.pod(0), 3);
    rig.awaitCaughtUp(fleet.pod(0), WAIT);
    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    assertThat(rig.held("pod-1", slept)).as("nothing of the sleeping pod came back").isEmpty();

    fleet.pod(1).wakeUp();
    fleet.traffic(fleet.pod(1), 5);
    rig.awaitCaughtUp(fleet.pod(1), WAIT);
    rig.awaitEqual(fleet.pod(1), fleet.everHeld(), WAIT);
  }

  /**
   * A reset reaches a writing stream by two routes: its apply is refused ({@code RESET}), and the
   * index's reset listener asks every stream of the group to start again. Either way the stream
   * purges once and replays its ring once.
   */
  @Test
  void flushAll_writingStream_purgesAndReplaysOnce(@Fresh RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    // Coordination rounds (which check the index's identity too) a few seconds apart, not the
    // rig's 1.5 s lease: the stream's apply is the first to meet the loss. The apply checks the
    // lease (gone with the FLUSHALL) before the epoch, so it is fenced and the next round takes
    // the stream again and hears of the reset: a round every 2 s, not every 30 s, is all the test
    // waits for.
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            c -> c.leaseTtl(Duration.ofSeconds(6)).gcInterval(Duration.ofSeconds(90)));
    Await.until(WAIT, "owned", () -> running(ingester) == 1);
    SimulatedPod pod = fleet.pod(0);
    rig.warmUp(fleet, pod);
    fleet.traffic(pod, 5);
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
    double replaysBefore = ingester.metrics().total("kvindex.ingester.replays");

    flushAll(redis);
    fleet.traffic(pod, 1); // its apply meets the new epoch: refused as RESET
    Await.until(
        WAIT,
        "the loss noticed",
        () ->
            ingester.meterRegistry().find("kvindex.index.resets").counters().stream()
                    .mapToDouble(c -> c.count())
                    .sum()
                >= 1);
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
    fleet.traffic(pod, 2);
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);

    assertThat(ingester.metrics().value("kvindex.ingester.purges", "reason", "index_reset"))
        .as("purges for the reset")
        .isEqualTo(1.0);
    assertThat(ingester.metrics().total("kvindex.ingester.replays") - replaysBefore)
        .as("replays of the ring since the reset")
        .isEqualTo(1.0);
  }

  @Test
  void takeover_catchesUpAtOnceWithAQuietPod(RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    Ingester a = rig.start("a", fleet.specs("engine"));
    Await.until(WAIT, "a owns the stream", () -> running(a) == 1);
    rig.warmUp(fleet, fleet.pod(0));
    fleet.traffic(5);
    rig.awaitCaughtUp(fleet.pod(0), WAIT);
    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);

    rig.gate(a).close(); // frozen: it renews nothing and applies nothing
    fleet.pod(0).resetPrefixCache();
    fleet.traffic(fleet.pod(0), 1); // the clear and one request, then the pod goes quiet
    // b would catch a quiet stream up only after a minute: only the takeover's catch-up can help.
    Ingester b = rig.start("b", fleet.specs("engine"), c -> c.idleCatchUp(Duration.ofMinutes(1)));
    Await.until(WAIT, "b took the stream over", () -> running(b) == 1);

    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    rig.gate(a).open();
  }
}
