package io.kvindex.ingester.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.discovery.KubernetesPod.Problem;
import io.kvindex.ingester.discovery.PodTracker.Round;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** When a Kubernetes pod is a stream, on a hand-moved ticker: every decision, no wait. */
class KubernetesPodTrackerTest {
  private static final Duration BOUND = Duration.ofSeconds(30);

  private final PodTracker tracker = new PodTracker(BOUND);
  private long now = 1_000_000_000L;

  private static KubernetesPod pod(String name, String uid, String ip, String engine, boolean ok) {
    PodSpec spec =
        PodSpecs.withIncarnation(
            PodSpec.of(name, "m", "tcp://" + ip + ":5557", null), uid + "/" + engine);
    return new KubernetesPod("ns/" + name, uid, ip, ok, spec, null);
  }

  private static KubernetesPod ready(String name) {
    return pod(name, "uid-" + name, "10.0.0.1", "0/c1", true);
  }

  private static KubernetesPod notReady(String name) {
    return pod(name, "uid-" + name, "10.0.0.1", "0/c1", false);
  }

  private List<String> names(KubernetesPod... pods) {
    return tracker.update(List.of(pods), now).pods().stream().map(PodSpec::name).toList();
  }

  private void advance(Duration d) {
    now += d.toNanos();
  }

  @Test
  void update_onlyReadyPodsBecomeStreams() {
    assertThat(names(notReady("a"), ready("b"))).containsExactly("b");
  }

  @Test
  void update_notReadyWithinTheBound_staysUnderItsLastReadySpec() {
    assertThat(names(ready("a"))).containsExactly("a");
    KubernetesPod changed = notReady("a");
    changed =
        new KubernetesPod(
            changed.key(),
            changed.uid(),
            changed.ip(),
            false,
            changed.spec().withMetricsUrl("http://elsewhere/metrics"),
            null);
    Round r = tracker.update(List.of(changed), now);
    assertThat(r.pods()).containsExactly(ready("a").spec());
    assertThat(tracker.notReady("ns/a")).isTrue();

    advance(BOUND.minusMillis(1));
    assertThat(names(notReady("a"))).as("1 ms before the bound").containsExactly("a");
    advance(Duration.ofMillis(1));
    assertThat(names(notReady("a"))).as("at the bound").isEmpty();
    advance(Duration.ofHours(1));
    assertThat(names(notReady("a"))).as("and after").isEmpty();
    assertThat(names(ready("a"))).as("ready again").containsExactly("a");
    assertThat(tracker.notReady("ns/a")).isFalse();
  }

  @Test
  void update_readyAgainWithinTheBound_restartsTheBound() {
    names(ready("a"));
    names(notReady("a"));
    advance(BOUND.minusSeconds(1));
    names(ready("a"));
    names(notReady("a"));
    advance(BOUND.minusSeconds(1));
    assertThat(names(notReady("a"))).containsExactly("a");
  }

  @Test
  void update_notReadyUnderANewIpOrEngine_isDroppedAtOnce() {
    names(ready("a"), ready("b"), ready("c"));
    assertThat(
            names(
                pod("a", "uid-a", "10.0.0.2", "0/c1", false),
                pod("b", "uid-b", "10.0.0.1", "1/c2", false),
                pod("c", "uid-other", "10.0.0.1", "0/c1", false)))
        .as("new IP, restarted engine, new pod behind the old name")
        .isEmpty();
  }

  @Test
  void update_readyUnderANewEngine_isANewIncarnationOfTheSameName() {
    PodSpec before = tracker.update(List.of(ready("a")), now).pods().get(0);
    PodSpec after =
        tracker.update(List.of(pod("a", "uid-a", "10.0.0.1", "1/c2", true)), now).pods().get(0);
    assertThat(after.name()).isEqualTo(before.name());
    assertThat(after.publisherEndpoint()).isEqualTo(before.publisherEndpoint());
    assertThat(after.incarnation()).isNotEqualTo(before.incarnation());
  }

  @Test
  void update_deletedPodIsNoStream_andComesBackNewIfRecreated() {
    names(ready("a"));
    names(notReady("a"));
    assertThat(names()).isEmpty();
    assertThat(names(notReady("a"))).as("not ready and unknown: no stream").isEmpty();
  }

  @Test
  void update_problemsAreReportedOncePerPod() {
    Problem p = new Problem("no_model", "pod ns/x has no annotation kvindex.io/model");
    KubernetesPod bad = new KubernetesPod("ns/x", "uid-x", "10.0.0.9", true, null, p);
    assertThat(tracker.update(List.of(bad, ready("a")), now).problems()).containsExactly(p);
    assertThat(tracker.update(List.of(bad, ready("a")), now).problems()).isEmpty();
    KubernetesPod again = new KubernetesPod("ns/x", "uid-x2", "10.0.0.9", true, null, p);
    assertThat(tracker.update(List.of(again), now).problems())
        .as("a new pod under the old name")
        .containsExactly(p);
  }

  @Test
  void update_twoPodsOfOneName_theFirstKeepsIt() {
    KubernetesPod first = ready("a");
    KubernetesPod second =
        new KubernetesPod("other/a", "uid-2", "10.0.0.5", true, ready("a").spec(), null);
    Round r = tracker.update(List.of(second, first), now);
    assertThat(r.pods()).containsExactly(first.spec());
    assertThat(r.problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.reason()).isEqualTo("duplicate_name");
              assertThat(p.message()).contains("other/a").contains("--kubernetes-pod-name ip");
            });
    assertThat(tracker.update(List.of(second, first), now).problems()).isEmpty();
  }
}
