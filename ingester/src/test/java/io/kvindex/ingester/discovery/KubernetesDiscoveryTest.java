package io.kvindex.ingester.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.ingester.Await;
import io.kvindex.ingester.discovery.KubernetesOptions.PodName;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Kubernetes discovery against a real HTTP API with list and watch (fabric8's mock server in CRUD
 * mode): pods added, made ready, restarted, relabelled, deleted; watches expired, refused and the
 * API gone. Time on a hand-moved ticker; every other wait is for a condition, with a deadline.
 */
class KubernetesDiscoveryTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Duration BOUND = Duration.ofSeconds(30);

  private final KubernetesApi api = KubernetesApi.start();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final AtomicLong ticker = new AtomicLong(1_000_000_000L);
  private final List<PodDiscovery> started = new ArrayList<>();

  @AfterEach
  void close() {
    started.forEach(PodDiscovery::close);
    api.close();
  }

  private KubernetesDiscovery discovery() {
    return discovery(List.of(KubernetesApi.NAMESPACE));
  }

  private KubernetesDiscovery discovery(List<String> namespaces) {
    KubernetesOptions options =
        new KubernetesOptions(namespaces, KubernetesApi.LABEL + "=true", BOUND, PodName.NAME);
    KubernetesDiscovery d = KubernetesDiscovery.start(api.client(), options, registry, ticker::get);
    started.add(d);
    return d;
  }

  private static List<String> names(PodDiscovery d) {
    return d.pods().stream().map(PodSpec::name).sorted().toList();
  }

  private static void awaitPods(PodDiscovery d, String... names) {
    List<String> want = List.of(names);
    Await.until(WAIT, () -> "pods " + want + ", got " + names(d), () -> names(d).equals(want));
  }

  private static Map<String, String> annotations() {
    return Map.of(
        KubernetesPod.MODEL,
        "m",
        KubernetesPod.REPLAY_PORT,
        "5600",
        KubernetesPod.KEY_MODE,
        "token");
  }

  private double meter(String name) {
    return registry.find(name).counters().stream().mapToDouble(c -> c.count()).sum();
  }

  private double healthy() {
    return registry.get("kvindex.ingester.discovery.healthy").gauge().value();
  }

  /**
   * Waits for the healthy gauge to read 1. It is read live from the informers, and the client
   * restarts a watch the mock server closes (after an outage, or a resource version it no longer
   * keeps), so a single read can catch the instant between two watches.
   */
  private void awaitHealthy() {
    Await.until(WAIT, "the healthy gauge at 1", () -> healthy() == 1.0);
  }

  @Test
  void pods_followThePodsLifeFromReadyToDeleted() {
    KubernetesDiscovery d = discovery();
    api.create("a", annotations());
    Await.until(WAIT, "listed and watching", () -> d.problem().isEmpty());
    assertThat(names(d)).as("pending: not a stream").isEmpty();

    api.ready("a", "10.1.0.7");
    awaitPods(d, "a");
    PodSpec a = d.pods().get(0);
    assertThat(a.publisherEndpoint()).isEqualTo("tcp://10.1.0.7:5557");
    assertThat(a.replayEndpoint()).isEqualTo("tcp://10.1.0.7:5600");
    assertThat(a.metricsUrl()).isEqualTo("http://10.1.0.7:8000/metrics");
    assertThat(a.keyMode()).isEqualTo(KeyMode.TOKEN);

    api.restart("a");
    Await.until(
        WAIT,
        "a new incarnation under the same name and IP",
        () -> !d.pods().get(0).incarnation().equals(a.incarnation()));
    assertThat(PodSpecs.withIncarnation(d.pods().get(0), a.incarnation())).isEqualTo(a);

    api.label("a", "false");
    awaitPods(d);
    api.label("a", "true");
    awaitPods(d, "a");
    api.delete("a");
    awaitPods(d);
    awaitHealthy();
  }

  @Test
  void pods_statusWriteResentAfterItsAnswerWasLost_takesEffectOnce() {
    KubernetesDiscovery d = discovery();
    api.create("a", annotations());
    api.loseNextPatchAnswer();
    api.ready("a", "10.1.0.7");
    awaitPods(d, "a");
    String incarnation = d.pods().get(0).incarnation();

    api.loseNextPatchAnswer();
    api.restart("a");
    assertThat(api.pod("a").getStatus().getContainerStatuses().get(0).getRestartCount())
        .isEqualTo(1);
    Await.until(WAIT, "the restart seen", () -> !d.pods().get(0).incarnation().equals(incarnation));

    api.loseNextPatchAnswer();
    api.label("a", "false");
    awaitPods(d);
  }

  @Test
  void pods_podWithoutModel_isSkippedAndCountedOnce() {
    KubernetesDiscovery d = discovery();
    api.create("good", annotations());
    api.create("bad", Map.of(KubernetesPod.REPLAY_PORT, "5600"));
    api.ready("good", "10.1.0.1");
    api.ready("bad", "10.1.0.2");
    awaitPods(d, "good");
    Await.until(WAIT, "bad seen", () -> meter("kvindex.ingester.discovery.pods.skipped") > 0);
    for (int i = 0; i < 5; i++) {
      assertThat(names(d)).containsExactly("good");
    }
    assertThat(
            registry
                .get("kvindex.ingester.discovery.pods.skipped")
                .tag("reason", "no_model")
                .counter()
                .count())
        .isEqualTo(1.0);
  }

  @Test
  void pods_notReadyPastTheBound_isNoStreamUntilReadyAgain() {
    KubernetesDiscovery d = discovery();
    api.create("a", annotations());
    api.ready("a", "10.1.0.7");
    awaitPods(d, "a");

    api.notReady("a");
    Await.until(
        WAIT,
        "a seen not ready",
        () -> {
          d.pods();
          return d.notReady(KubernetesApi.NAMESPACE, "a");
        });
    ticker.addAndGet(BOUND.minusMillis(1).toNanos());
    assertThat(names(d)).as("not ready 1 ms less than the bound").containsExactly("a");
    ticker.addAndGet(Duration.ofMillis(1).toNanos());
    assertThat(names(d)).as("not ready for the bound").isEmpty();

    api.ready("a", "10.1.0.7");
    awaitPods(d, "a");
  }

  @Test
  void pods_watchExpiredWith410_relistsAndNeverLosesAPodStillThere() {
    KubernetesDiscovery d = discovery();
    for (String p : List.of("a", "b")) {
      api.create(p, annotations());
      api.ready(p, "10.1.0.1");
    }
    awaitPods(d, "a", "b");
    List<List<String>> seen = new ArrayList<>();

    int lists = api.lists();
    api.expireWatches();
    Await.until(
        WAIT,
        "listed again after 410 Gone",
        () -> {
          seen.add(names(d));
          return api.lists() > lists && d.problem().isEmpty();
        });

    api.refuseWatches(true); // the watch breaks; nobody sees what happens next
    Await.until(WAIT, "the broken watch shows", () -> d.problem().isPresent());
    api.delete("b");
    for (int i = 0; i < 5; i++) {
      assertThat(names(d)).as("the last pods known").containsExactly("a", "b");
    }
    api.refuseWatches(false); // the watch is back, its history gone: 410, list again
    Await.until(
        WAIT,
        "b's deletion reconciled",
        () -> {
          seen.add(names(d));
          return seen.get(seen.size() - 1).equals(List.of("a"));
        });
    assertThat(seen).allSatisfy(pods -> assertThat(pods).contains("a"));
    // On a loaded machine the informer can still be reopening its watch for a moment after the
    // relisted pods show: the problem must clear, not at that very instant.
    Await.until(WAIT, "the watch back, no problem shown", () -> d.problem().isEmpty());
  }

  @Test
  void pods_apiServerUnavailable_keepsTheLastPodsAndMovesNoTimer() {
    KubernetesDiscovery d = discovery();
    for (String p : List.of("a", "b")) {
      api.create(p, annotations());
      api.ready(p, "10.1.0.1");
    }
    awaitPods(d, "a", "b");
    api.notReady("b");
    Await.until(
        WAIT,
        "b seen not ready",
        () -> {
          d.pods();
          return d.notReady(KubernetesApi.NAMESPACE, "b");
        });

    api.unavailable(true);
    Await.until(WAIT, "the outage shows", () -> d.problem().isPresent());
    ticker.addAndGet(BOUND.multipliedBy(10).toNanos());
    assertThat(names(d)).as("nothing purged by the outage").containsExactly("a", "b");
    assertThat(healthy()).isZero();
    assertThat(d.problem().orElseThrow())
        .contains(KubernetesApi.NAMESPACE)
        .contains("serving the last 2 pods known")
        .contains("may get, list and watch pods");

    api.unavailable(false);
    Await.until(WAIT, "listed and watching again", () -> d.problem().isEmpty());
    awaitPods(d, "a"); // b has been not ready past the bound, as the API says again
    awaitHealthy();
  }

  @Test
  void start_apiUnavailable_countsFailedListsAndListsOnceItAnswers() {
    api.unavailable(true);
    KubernetesDiscovery d = discovery();
    Await.until(
        WAIT, "a failed list counted", () -> meter("kvindex.ingester.discovery.errors") >= 1);
    assertThat(d.pods()).isEmpty();
    assertThat(d.problem().orElseThrow()).contains("not listed and watched");

    api.unavailable(false);
    api.create("a", annotations());
    api.ready("a", "10.1.0.7");
    awaitPods(d, "a");
  }

  @Test
  void connect_ownClientWatchesItsOwnNamespaceByDefault() {
    api.create("a", annotations());
    api.ready("a", "10.1.0.7");
    KubernetesOptions options =
        new KubernetesOptions(List.of(), KubernetesApi.LABEL + "=true", BOUND, PodName.IP);
    KubernetesDiscovery d =
        KubernetesDiscovery.connect(api.client().getConfiguration(), options, registry);
    started.add(d);
    awaitPods(d, "10.1.0.7");
  }

  @Test
  void start_severalNamespaces_oneInformerEach() {
    api.create("a", annotations());
    api.ready("a", "10.1.0.7");
    KubernetesDiscovery d = discovery(List.of("elsewhere", KubernetesApi.NAMESPACE));
    awaitPods(d, "a");
    assertThat(d.problem()).isEmpty();
  }
}
