package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.discovery.KubernetesApi;
import io.kvindex.ingester.discovery.KubernetesOptions;
import io.kvindex.ingester.discovery.KubernetesOptions.PodName;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.net.URI;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Ingester replicas that learn their pods from a Kubernetes API server (fabric8's mock server in
 * CRUD mode), where each pod object publishes a real simulated vLLM pod's ports in the documented
 * annotations; a real Redis; the index checked against the simulated engines' ground truth.
 */
@UsesRedis
class KubernetesIngesterTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final KubernetesOptions OPTIONS =
      new KubernetesOptions(
          List.of(KubernetesApi.NAMESPACE),
          KubernetesApi.LABEL + "=true",
          Duration.ofSeconds(30),
          PodName.NAME);

  private Rig rig;
  private Fleet fleet;
  private KubernetesApi api;

  @BeforeEach
  void setUp(RedisStandalone redis, TestInfo test) {
    org.slf4j.LoggerFactory.getLogger(KubernetesIngesterTest.class)
        .info("=== {}", test.getDisplayName());
    rig = new Rig(redis);
    api = KubernetesApi.start();
  }

  @AfterEach
  void tearDown() {
    rig.close();
    if (fleet != null) {
      fleet.close();
    }
    api.close();
  }

  /** A replica with a Kubernetes client and informer of its own, as each ingester pod has. */
  private Ingester replica(String name) {
    return rig.start(
        name,
        registry -> PodDiscovery.kubernetes(api.client(), OPTIONS, registry, System::nanoTime));
  }

  /** Publishes a simulated pod as a ready Kubernetes pod at 127.0.0.1 with its real ports. */
  private void publish(SimulatedPod pod) {
    URI events = URI.create(pod.endpoints().get(0).publish());
    URI replay = URI.create(pod.endpoints().get(0).replay());
    api.create(
        pod.name(),
        Map.of(
            "kvindex.io/model", pod.model(),
            "kvindex.io/kv-events-port", Integer.toString(events.getPort()),
            "kvindex.io/replay-port", Integer.toString(replay.getPort()),
            "kvindex.io/metrics-port", Integer.toString(pod.httpAddress().getPort())));
    api.ready(pod.name(), "127.0.0.1");
  }

  private static int owned(Ingester i) {
    return (int)
        i.workers().values().stream()
            .filter(w -> w.status().state() == StreamStatus.State.RUNNING)
            .count();
  }

  private static boolean owns(Ingester i, String pod) {
    return i.workers().keySet().stream().anyMatch(s -> s.pod().equals(pod));
  }

  private static double purges(String reason, Ingester... replicas) {
    double n = 0;
    for (Ingester i : replicas) {
      n += i.metrics().value("kvindex.ingester.purges", "reason", reason);
    }
    return n;
  }

  private static double total(String counter, Ingester... replicas) {
    double n = 0;
    for (Ingester i : replicas) {
      n += i.metrics().total(counter);
    }
    return n;
  }

  private void awaitEqual(SimulatedPod pod) {
    rig.awaitCaughtUp(pod, WAIT);
    rig.awaitEqual(pod, fleet.everHeld(), WAIT);
  }

  @Test
  void kubernetesPods_twoReplicasShareThemAndFollowRestartsRelabelsAndDeletions() {
    fleet = Fleet.start(4);
    fleet.pods().forEach(this::publish);
    Ingester a = replica("a");
    Ingester b = replica("b");
    Await.until(
        WAIT,
        () -> "2 streams each, got " + owned(a) + " and " + owned(b),
        () -> owned(a) == 2 && owned(b) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    fleet.pods().forEach(this::awaitEqual);

    fleet.pod(0).restart(); // the engine restarts in place: same name, same IP
    fleet.traffic(fleet.pod(0), 5); // and publishes from 0 before the kubelet's word is seen
    api.restart("pod-0"); // one restart more, a new container ID
    Await.until(
        WAIT, "the new incarnation seen", () -> total("kvindex.ingester.pods.replaced", a, b) == 1);
    awaitEqual(fleet.pod(0));
    assertThat(total("kvindex.ingester.pods.replaced", a, b)).isEqualTo(1.0);
    assertThat(total("kvindex.ingester.engine.restarts", a, b)).isPositive();

    Set<Long> relabelled = new HashSet<>(fleet.pod(1).cachedBlocks(0, "GPU"));
    Set<Long> deleted = new HashSet<>(fleet.pod(2).cachedBlocks(0, "GPU"));
    api.label("pod-1", "false");
    api.delete("pod-2");
    Await.until(WAIT, "pod-1 purged", () -> rig.held("pod-1", relabelled).isEmpty());
    Await.until(WAIT, "pod-2 purged", () -> rig.held("pod-2", deleted).isEmpty());
    Await.until(
        WAIT,
        "their streams released",
        () -> List.of("pod-1", "pod-2").stream().noneMatch(p -> owns(a, p) || owns(b, p)));
    assertThat(purges("pod_removed", a, b)).isEqualTo(2.0);

    fleet.traffic(5);
    awaitEqual(fleet.pod(0));
    awaitEqual(fleet.pod(3));
    assertThat(a.readiness().ok()).as(a.readiness().text()).isTrue();
    assertThat(a.meterRegistry().scrape()).contains("kvindex_ingester_discovery_healthy 1.0");
  }

  @Test
  void kubernetesApiUnavailable_showsOnReadinessAndPurgesNothing() {
    fleet = Fleet.start(2);
    fleet.pods().forEach(this::publish);
    Ingester a = replica("a");
    Await.until(WAIT, "both owned", () -> owned(a) == 2);
    fleet.pods().forEach(p -> rig.warmUp(fleet, p));
    fleet.traffic(10);
    fleet.pods().forEach(this::awaitEqual);
    assertThat(a.readiness().ok()).as(a.readiness().text()).isTrue();

    api.unavailable(true);
    Await.until(
        WAIT, "readiness says why", () -> a.readiness().text().startsWith("discovery: kubernetes"));
    assertThat(a.readiness().ok()).isFalse();
    fleet.traffic(10); // ingest goes on from the last pods known
    fleet.pods().forEach(this::awaitEqual);
    assertThat(a.meterRegistry().scrape()).contains("kvindex_ingester_discovery_healthy 0.0");

    api.unavailable(false);
    Await.until(WAIT, "ready again", () -> a.readiness().ok());
    assertThat(a.metrics().total("kvindex.ingester.purges")).isZero();
    assertThat(owned(a)).isEqualTo(2);
  }
}
