package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.KvEventBatch;
import io.kvindex.simulator.load.LoadRunner;
import io.kvindex.simulator.load.SyntheticWorkload;
import io.kvindex.simulator.load.Workload;
import io.kvindex.simulator.load.WorkloadTest;
import io.kvindex.wire.KvEventDecoder;
import io.kvindex.wire.ReplayReply;
import io.kvindex.wire.WireEra;
import io.kvindex.wire.ZmqFrames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

class SimulatedFleetTest {

  private static SimulatedFleet.Builder fleet(int pods) {
    return SimulatedFleet.builder()
        .pods(pods)
        .podTemplate(PodConfig.builder().http(false).capacityBlocks(512).build());
  }

  @Test
  void submit_roundRobinVisitsEveryPodInTurn() {
    try (SimulatedFleet fleet = fleet(3).router(PodRouter.roundRobin()).build()) {
      List<String> served = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        served.add(fleet.submit(TestPods.request(i, 32, 1)).pod());
      }
      assertThat(served).containsExactly("pod-0", "pod-1", "pod-2", "pod-0", "pod-1", "pod-2");
      assertThat(fleet.pods())
          .extracting(SimulatedPod::name)
          .containsExactly("pod-0", "pod-1", "pod-2");
    }
  }

  @Test
  void stats_hitRateIsCachedOverPromptTokens() {
    try (SimulatedFleet fleet = fleet(2).build()) {
      PodRouter first = (request, pods) -> pods.get(0);
      InferenceRequest r = TestPods.request(1, 64, 1);
      fleet.submit("sim-model", r, first);
      fleet.submit("sim-model", r, first);

      FleetStats stats = fleet.stats();
      assertThat(stats.requests()).isEqualTo(2);
      assertThat(stats.promptTokens()).isEqualTo(128);
      assertThat(stats.cachedTokens()).isEqualTo(48);
      assertThat(stats.hitRate()).isEqualTo(48.0 / 128);
    }
  }

  @Test
  void submit_modelsSplitThePodsAndTopicsFollowTheTemplate() {
    try (SimulatedFleet fleet =
        SimulatedFleet.builder()
            .pods(4)
            .models(List.of("a", "b"))
            .podTemplate(PodConfig.builder().http(false).topic("kv@{pod}@{model}").build())
            .build()) {
      assertThat(fleet.pods("b")).extracting(SimulatedPod::name).containsExactly("pod-1", "pod-3");
      assertThat(fleet.pod("pod-3").endpoints().get(0).topic()).isEqualTo("kv@pod-3@b");
      assertThat(fleet.submit("b", TestPods.request(1, 32, 1)).pod()).isIn("pod-1", "pod-3");
      assertThatThrownBy(() -> fleet.submit("c", TestPods.request(1, 32, 1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no pod serves model c");
      assertThatThrownBy(
              () -> fleet.submit("a", TestPods.request(1, 32, 1), (r, pods) -> fleet.pod("pod-1")))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void perPod_setsEachPodsOwnEra() {
    try (SimulatedFleet fleet =
        fleet(2).perPod((i, pod) -> pod.era(i == 0 ? WireEra.V0_9_1 : WireEra.MAP)).build()) {
      assertThat(fleet.pod("pod-0").config().era()).isEqualTo(WireEra.V0_9_1);
      assertThat(fleet.pod("pod-1").config().era()).isEqualTo(WireEra.MAP);
      assertThat(fleet.pod("pod-1").config().capacityBlocks()).isEqualTo(512);
    }
  }

  @Test
  void submit_sleepingPodCountsAsFailed() {
    try (SimulatedFleet fleet = fleet(1).build()) {
      fleet.pod("pod-0").sleep(1);
      assertThatThrownBy(() -> fleet.submit(TestPods.request(1, 32, 1)))
          .isInstanceOf(PodUnavailableException.class);
      assertThat(fleet.stats().failed()).isEqualTo(1);
    }
  }

  @Test
  void loadRunner_traceHitRateOnOnePodIsExact() throws Exception {
    try (SimulatedFleet fleet = fleet(1).build();
        Workload trace = Workload.mooncakeTrace(WorkloadTest.miniTrace(), 32)) {
      FleetStats stats =
          new LoadRunner(fleet, LoadRunner.Options.defaults().withSpeed(Double.POSITIVE_INFINITY))
              .run(trace, s -> {});
      assertThat(stats.requests()).isEqualTo(5);
      assertThat(stats.promptTokens()).isEqualTo(348);
      assertThat(stats.cachedTokens()).isEqualTo(144);
    }
  }

  @Test
  void loadRunner_stopsAtTheDurationAndMaxRequests() {
    try (SimulatedFleet fleet = fleet(2).build()) {
      LoadRunner.Options options =
          LoadRunner.Options.defaults().withSpeed(Double.POSITIVE_INFINITY).withMaxRequests(30);
      FleetStats stats =
          new LoadRunner(fleet, options)
              .run(Workload.synthetic(SyntheticWorkload.Options.defaults()), s -> {});
      assertThat(stats.requests()).isEqualTo(30);

      FleetStats limited =
          new LoadRunner(
                  fleet,
                  LoadRunner.Options.defaults()
                      .withSpeed(Double.POSITIVE_INFINITY)
                      .withRate(10.0)
                      .withDuration(Duration.ofSeconds(2)))
              .run(Workload.synthetic(SyntheticWorkload.Options.defaults()), s -> {});
      assertThat(limited.requests() - 30).isBetween(5L, 60L);
    }
  }

  @Test
  void groundTruth_equalsTheEventsReplayedOverTheWire() {
    PodConfig template =
        PodConfig.builder().http(false).capacityBlocks(256).cpuCapacityBlocks(128).build();
    try (SimulatedFleet fleet = SimulatedFleet.builder().pods(2).podTemplate(template).build();
        ZContext zmq = new ZContext()) {
      SyntheticWorkload.Options small =
          new SyntheticWorkload.Options(4, 1.0, 200, 60, 40, 0.3, 4, 2048, 10, List.of(), 3);
      new LoadRunner(
              fleet,
              LoadRunner.Options.defaults()
                  .withSpeed(Double.POSITIVE_INFINITY)
                  .withMaxRequests(150))
          .run(Workload.synthetic(small), s -> {});
      fleet.pod("pod-1").resetPrefixCache();
      fleet.submit("sim-model", TestPods.request(77, 40, 1), (r, pods) -> fleet.pod("pod-1"));
      assertThat(fleet.stats().hitRate()).isGreaterThan(0.2);

      for (SimulatedPod pod : fleet.pods()) {
        Map<String, Set<Long>> applied = new TreeMap<>();
        for (KvEventBatch batch : replayAll(zmq, pod.endpoints().get(0).replay())) {
          Recorder.apply(applied, batch);
        }
        assertThat(applied.getOrDefault("GPU", Set.of()))
            .isEqualTo(pod.cachedBlocks(0, "GPU"))
            .isNotEmpty();
        assertThat(applied.getOrDefault("CPU", new HashSet<>()))
            .isEqualTo(pod.cachedBlocks(0, "CPU"));
      }
    }
  }

  private static List<KvEventBatch> replayAll(ZContext zmq, String endpoint) {
    ZMQ.Socket dealer = zmq.createSocket(SocketType.DEALER);
    dealer.setReceiveTimeOut(100);
    dealer.setHandshakeIvl(500);
    dealer.connect(endpoint);
    byte[][] request = ZmqFrames.replayRequest(0);
    dealer.sendMore(request[0]);
    dealer.send(request[1]);
    List<KvEventBatch> batches = new ArrayList<>();
    long expectedSeq = 0;
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      ZMsg msg = ZMsg.recvMsg(dealer);
      if (msg == null) {
        continue;
      }
      ReplayReply reply =
          ZmqFrames.parseReplay(msg.stream().map(f -> f.getData()).toArray(byte[][]::new));
      if (reply instanceof ReplayReply.Batch b) {
        assertThat(b.message().seq()).isEqualTo(expectedSeq++);
        batches.add(KvEventDecoder.decode(b.message().payload()));
      } else {
        return batches;
      }
    }
    throw new AssertionError("replay did not end within 20 s");
  }
}
