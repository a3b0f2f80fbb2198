package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.ReplayFraming;
import io.kvindex.wire.WireEra;
import io.kvindex.wire.ZmqFrames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Input that can never apply, cannot be read, or would not fit in memory: each is counted, costs at
 * most the stream it came on a purge, and the stream goes on; other streams are untouched.
 */
@UsesRedis
class HostileInputTest {
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

  private static double counted(Ingester i, String name, String tag, String value) {
    return i.meterRegistry().find(name).tag(tag, value).counters().stream()
        .mapToDouble(c -> c.count())
        .sum();
  }

  private Ingester warm(RedisStandalone redis, int pods) {
    rig = new Rig(redis);
    fleet = Fleet.start(pods);
    Ingester ingester = rig.start("r1", fleet.specs("engine"));
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(5);
    for (SimulatedPod p : fleet.pods()) {
      rig.awaitCaughtUp(p, WAIT);
      rig.awaitEqual(p, fleet.everHeld(), WAIT);
    }
    return ingester;
  }

  /** A batch with a field the index cannot store (group_idx over 65535) is rejected once. */
  @Test
  void poisonBatch_rejectedOnce_andTheStreamGoesOn(RedisStandalone redis) {
    Ingester ingester = warm(redis, 1);
    SimulatedPod pod = fleet.pod(0);
    BlockStored poison =
        new BlockStored(
            List.of(42L), null, List.of(), 16, null, null, null, null, 70_000, null, null);
    byte[] payload =
        KvEventEncoder.of(WireEra.V0_22).encode(KvEventBatch.of(0, List.of(poison), 0));
    pod.inject(0, payload);
    fleet.traffic(pod, 10); // stores and evictions after it must land

    rig.awaitCaughtUp(pod, WAIT);
    assertThat(counted(ingester, "kvindex.ingester.batches", "outcome", "rejected")).isEqualTo(1);
    assertThat(counted(ingester, "kvindex.ingester.purges", "reason", "batch_rejected"))
        .isEqualTo(1);
    assertThat(rig.falsePositives(pod, fleet.everHeld())).isEmpty();
    pod.resetPrefixCache();
    fleet.traffic(pod, 3);
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
  }

  /** Live copies damaged on the way are read again from the replay ring: nothing is lost. */
  @Test
  void garbledLiveBatches_readFromTheRing(RedisStandalone redis) {
    Ingester ingester = warm(redis, 1);
    SimulatedPod pod = fleet.pod(0);
    pod.faults().garbleFraction(1);
    fleet.traffic(pod, 8);
    pod.faults().clear();
    fleet.traffic(pod, 2);

    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
    assertThat(
            ingester.meterRegistry().find("kvindex.ingester.batches.malformed").counter().count())
        .isGreaterThanOrEqualTo(8);
    assertThat(counted(ingester, "kvindex.ingester.purges", "reason", "malformed_batch")).isZero();
  }

  /** A batch unreadable in the ring too is lost: the stream is purged and goes on after it. */
  @Test
  void unreadableEverywhere_purgedAndGoesOn(RedisStandalone redis) {
    Ingester ingester = warm(redis, 2);
    SimulatedPod pod = fleet.pod(0);
    pod.inject(0, "not msgpack at all".getBytes(StandardCharsets.UTF_8));
    fleet.traffic(pod, 5);

    rig.awaitCaughtUp(pod, WAIT);
    Await.until(
        WAIT,
        "the malformed batch's purge",
        () -> counted(ingester, "kvindex.ingester.purges", "reason", "malformed_batch") == 1);
    assertThat(rig.falsePositives(pod, fleet.everHeld())).isEmpty();
    rig.awaitEqual(fleet.pod(1), fleet.everHeld(), WAIT);
  }

  /**
   * A replay endpoint that streams without end costs the process no more than its memory budget: it
   * is read one window at a time (each window applied before the next is asked for), and the other
   * streams stay exact.
   */
  @Test
  void endlessReplay_readInWindowsWithinTheBudget(RedisStandalone redis) throws Exception {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    long budget = 8 << 20;
    try (ZContext zmq = new ZContext();
        EndlessReplay endless = new EndlessReplay(zmq)) {
      PodSpec hostile =
          PodSpec.of("hostile", Fleet.MODEL, endless.publishEndpoint(), endless.replayEndpoint());
      List<PodSpec> pods = new ArrayList<>(fleet.specs("engine"));
      pods.add(hostile);
      Ingester ingester =
          rig.start(
              "r1",
              pods,
              b ->
                  b.memoryBudgetBytes(budget)
                      .maxPendingBytes(1 << 20)
                      .maxReplayBytes(512 << 10)
                      .maxMessageBytes(1 << 20));
      rig.warmUp(fleet, fleet.pod(0));
      Await.until(
          WAIT,
          "the endless replay read in windows",
          () -> {
            endless.publishLive(); // live batches with a gap before them: they ask for a replay
            return counted(ingester, "kvindex.ingester.replays", "outcome", "cut") >= 3;
          });
      assertThat(ingester.meterRegistry().get("kvindex.ingester.memory.peak").gauge().value())
          .as("the most the budget counted")
          .isLessThanOrEqualTo(budget);
      fleet.traffic(5);
      rig.awaitCaughtUp(fleet.pod(0), WAIT);
      rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    }
  }

  /**
   * A hostile publisher: live batches starting at sequence 1000, and a replay ROUTER that answers
   * any request with readable batches of 64 KiB, without end.
   */
  private static final class EndlessReplay implements AutoCloseable {
    private final ZMQ.Socket pub;
    private final ZMQ.Socket router;
    private final Thread thread;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final byte[] payload;
    private long liveSeq = 1000;

    EndlessReplay(ZContext zmq) {
      pub = zmq.createSocket(SocketType.PUB);
      pub.bind("tcp://127.0.0.1:*");
      router = zmq.createSocket(SocketType.ROUTER);
      router.setSndHWM(64);
      router.setRouterMandatory(
          true); // a send to a reader that left fails: counted bytes were read
      router.bind("tcp://127.0.0.1:*");
      List<Long> hashes = new ArrayList<>();
      for (long h = 1; h <= 8000; h++) {
        hashes.add(h);
      }
      payload =
          KvEventEncoder.of(WireEra.V0_22)
              .encode(KvEventBatch.of(0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0));
      thread = new Thread(this::serve, "endless-replay");
      thread.setDaemon(true);
      thread.start();
    }

    String publishEndpoint() {
      return pub.getLastEndpoint();
    }

    String replayEndpoint() {
      return router.getLastEndpoint();
    }

    synchronized void publishLive() {
      byte[][] frames = ZmqFrames.live(new EventMessage("", liveSeq++, payload));
      pub.sendMore(frames[0]);
      pub.sendMore(frames[1]);
      pub.send(frames[2]);
    }

    private void serve() {
      router.setReceiveTimeOut(50);
      while (running.get()) {
        ZMsg request = ZMsg.recvMsg(router);
        if (request == null) {
          continue;
        }
        byte[] peer = request.getFirst().getData();
        router.setSendTimeOut(200);
        for (long seq = 0; running.get(); seq++) {
          byte[][] frames =
              ZmqFrames.replayBatch(ReplayFraming.WITH_TOPIC, new EventMessage("", seq, payload));
          if (!router.sendMore(peer)) {
            break;
          }
          for (int f = 0; f < frames.length - 1; f++) {
            router.sendMore(frames[f]);
          }
          if (!router.send(frames[frames.length - 1])) {
            break; // the reader is gone or stopped reading
          }
        }
      }
    }

    @Override
    public void close() throws InterruptedException {
      running.set(false);
      thread.join(5000);
    }
  }
}
