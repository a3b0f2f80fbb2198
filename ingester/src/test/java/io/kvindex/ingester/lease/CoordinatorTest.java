package io.kvindex.ingester.lease;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.InMemoryPrefixIndex;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Gate;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.IngesterMetrics;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.discovery.PodSpecs;
import io.kvindex.ingester.keycheck.KeyChecks;
import io.kvindex.ingester.stream.StreamWorker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.ZContext;

/**
 * Lease decisions on the in-memory index with a hand-moved clock: fair shares, takeovers, shedding
 * and retiring happen at exactly the ticks they should, with no wait on the wall clock. The workers
 * it starts hold real (idle) sockets to endpoints nobody serves.
 */
class CoordinatorTest {
  private static final Duration TTL = Duration.ofSeconds(6);

  private final AtomicLong nowNanos = new AtomicLong(1_000_000_000L);
  private final InstantSource clock = () -> Instant.ofEpochSecond(0, nowNanos.get());
  private final PrefixIndex index = InMemoryPrefixIndex.of(PrefixIndex.builder(), clock);
  private final ZContext zmq = new ZContext();
  private final List<Coordinator> started = new ArrayList<>();
  private final java.util.Map<String, IngesterMetrics> metrics = new java.util.HashMap<>();

  @AfterEach
  void stop() {
    started.forEach(c -> c.stopAll(true, Duration.ofSeconds(5)));
    zmq.close();
  }

  private void advance(Duration d) {
    nowNanos.addAndGet(d.toNanos());
  }

  private Coordinator replica(String name, PodDiscovery discovery) {
    IngesterConfig config =
        IngesterConfig.builder().replicaId(name).leaseTtl(TTL).httpPort(-1).build();
    IngesterMetrics meters =
        metrics.computeIfAbsent(name, n -> new IngesterMetrics(new SimpleMeterRegistry()));
    Shared shared =
        new Shared(
            config,
            zmq,
            index,
            meters,
            new Gate(),
            clock,
            nowNanos::get,
            new KeyChecks(Duration.ZERO, index, meters, nowNanos::get, clock));
    Coordinator c = new Coordinator(shared, discovery);
    started.add(c);
    return c;
  }

  private static List<PodSpec> pods(int n) {
    List<PodSpec> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      // nobody listens there: the workers idle, as workers of quiet pods do
      out.add(PodSpec.of("pod-" + i, "m", "tcp://127.0.0.1:" + (20_000 + i), null));
    }
    return out;
  }

  private static Set<String> owned(Coordinator c) {
    return c.workers().keySet().stream().map(StreamId::pod).collect(Collectors.toSet());
  }

  @Test
  void tick_twoReplicasShareFairly() {
    PodDiscovery fleet = PodDiscovery.of(pods(8));
    Coordinator a = replica("a", fleet);
    Coordinator b = replica("b", fleet);
    a.tick();
    assertThat(owned(a)).as("alone, a takes everything").hasSize(8);
    b.tick();
    a.tick(); // sees b registered: over its fair share of 4, it sheds
    assertThat(owned(a)).hasSize(4);
    // a shed lease is released when its worker has stopped, which takes one step of the worker
    until(
        "b takes the shed streams",
        () -> {
          b.tick();
          return owned(b).size() == 4;
        });
    assertThat(owned(b)).doesNotContainAnyElementsOf(owned(a));
  }

  /**
   * A replica that lost its leases (paused past their TTL while another took them all) takes back
   * the streams the other sheds as soon as they are given up, between its rounds: before, only a
   * replica that had just joined watched for them, and this one waited for its next round.
   */
  @Test
  void takeReleased_aReplicaThatLostItsLeasesTakesTheShedOnesBetweenRounds() {
    PodDiscovery fleet = PodDiscovery.of(pods(4));
    Coordinator a = replica("a", fleet);
    Coordinator b = replica("b", fleet);
    a.tick();
    b.tick();
    a.tick();
    until(
        "two each",
        () -> {
          b.tick();
          return owned(b).size() == 2;
        });
    assertThat(owned(a)).hasSize(2);

    // a is paused: its registration and leases expire, and b takes every stream
    advance(TTL.dividedBy(2));
    b.tick();
    advance(TTL.dividedBy(2).plusMillis(1));
    b.tick();
    assertThat(owned(b)).hasSize(4);

    a.tick(); // resumed: its leases are lost, and b holds them all
    assertThat(owned(a)).isEmpty();
    b.tick(); // b sees a again and sheds two; they are given up once their workers have stopped
    assertThat(owned(b)).hasSize(2);
    until(
        "a takes them between its rounds",
        () -> {
          a.takeReleased();
          return owned(a).size() == 2;
        });
  }

  @Test
  void tick_aDeadReplicasLeasesMoveOnlyOnceExpired() {
    PodDiscovery fleet = PodDiscovery.of(pods(4));
    Coordinator a = replica("a", fleet);
    Coordinator b = replica("b", fleet);
    a.tick();
    b.tick();
    assertThat(owned(a)).hasSize(4);
    assertThat(owned(b)).as("a holds every lease, b registered but over no stream").isEmpty();

    // a dies: it ticks no more. Its leases hold for the TTL since its last renewal.
    advance(TTL.minusMillis(1));
    b.tick();
    assertThat(owned(b)).as("1 ms before a's leases expire").isEmpty();
    advance(Duration.ofMillis(2));
    b.tick();
    assertThat(owned(b)).as("once they have").hasSize(4);
  }

  @Test
  void tick_podsLeavingDiscoveryAreReleasedOnceTheirPurgeIsDone() {
    AtomicReference<List<PodSpec>> fleet = new AtomicReference<>(pods(2));
    Coordinator a = replica("a", fleet::get);
    a.tick();
    assertThat(owned(a)).containsExactlyInAnyOrder("pod-0", "pod-1");
    fleet.set(pods(1));
    a.tick();
    until(
        "pod-1 purged, then released",
        () -> {
          a.tick();
          return owned(a).equals(Set.of("pod-0"));
        });
    assertThat(metrics.get("a").value("kvindex.ingester.purges", "reason", "pod_removed"))
        .isEqualTo(1.0);
    until(
        "its lease released for another replica",
        () -> index.acquireLease(StreamId.of("m", "pod-1"), "c", TTL).isPresent());
  }

  @Test
  void tick_aNewIncarnationRestartsTheStreamThenAFreshWorkerOwnsIt() {
    StreamId id = StreamId.of("m", "pod-0");
    PodSpec first = PodSpecs.withIncarnation(pods(1).get(0), "uid-1/0/c1");
    AtomicReference<List<PodSpec>> fleet = new AtomicReference<>(List.of(first));
    Coordinator a = replica("a", fleet::get);
    a.tick();
    StreamWorker before = a.workers().get(id);
    assertThat(before).isNotNull();

    fleet.set(List.of(PodSpecs.withIncarnation(first, "uid-1/1/c2"))); // same name and endpoint
    until(
        "restarted, then a fresh worker on the new incarnation",
        () -> {
          a.tick();
          StreamWorker w = a.workers().get(id);
          return w != null && w != before && w.pod().incarnation().equals("uid-1/1/c2");
        });
    assertThat(before.status().restarts()).as("the old worker restarted the stream").isEqualTo(1);
    IngesterMetrics m = metrics.get("a");
    assertThat(m.total("kvindex.ingester.pods.replaced")).isEqualTo(1.0);
    assertThat(m.value("kvindex.ingester.purges", "reason", "engine_restart")).isEqualTo(1.0);
  }

  @Test
  void tick_anotherSpecChangeRestartsTheWorkerWithoutAPurge() {
    StreamId id = StreamId.of("m", "pod-0");
    PodSpec first = pods(1).get(0);
    AtomicReference<List<PodSpec>> fleet = new AtomicReference<>(List.of(first));
    Coordinator a = replica("a", fleet::get);
    a.tick();
    StreamWorker before = a.workers().get(id);

    fleet.set(List.of(first.withMetricsUrl("http://127.0.0.1:1/metrics")));
    until(
        "a fresh worker on the new spec",
        () -> {
          a.tick();
          StreamWorker w = a.workers().get(id);
          return w != null && w != before && w.pod().metricsUrl() != null;
        });
    assertThat(metrics.get("a").total("kvindex.ingester.purges")).isZero();
  }

  /** Waits for a condition the workers' own threads bring about, with a deadline. */
  private static void until(String what, java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 10 s: " + what);
      }
      java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
    }
  }
}
