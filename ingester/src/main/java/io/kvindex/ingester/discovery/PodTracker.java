package io.kvindex.ingester.discovery;

import io.kvindex.common.Check;
import io.kvindex.ingester.discovery.KubernetesPod.Problem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which Kubernetes pods are streams, round after round: the decisions of Kubernetes discovery, with
 * no I/O and no clock of its own. Not thread-safe: its owner calls it under a lock.
 *
 * <p>A pod is a stream while it is ready. Once it was one, it stays one while it is not ready for
 * less than the bound, under the spec it had when last ready, unless what runs there changed
 * meanwhile (a new UID, IP or engine incarnation: that engine is not the one whose blocks the index
 * holds). Past the bound, or deleted, it is no stream; ready again, it is one again. A pod whose
 * annotations give no spec is skipped and reported once per UID and problem; when two pods would
 * get the same name, the first by namespace and name keeps it.
 */
final class PodTracker {
  private record Tracked(PodSpec spec, String uid, String ip, long notReadySince) {}

  /**
   * One round's outcome.
   *
   * @param pods the streams' pods, by namespace and name
   * @param problems the problems not reported before
   */
  record Round(List<PodSpec> pods, List<Problem> problems) {}

  private static final long READY = Long.MIN_VALUE;

  private final long notReadyAfterNanos;
  private Map<String, Tracked> tracked = new HashMap<>();
  private final Map<String, Problem> reported = new HashMap<>();

  PodTracker(Duration notReadyAfter) {
    this.notReadyAfterNanos = Check.positive(notReadyAfter, "notReadyAfter").toNanos();
  }

  /** The streams' pods given what the pods say now, at {@code nowNanos} on a monotonic ticker. */
  Round update(Collection<KubernetesPod> observed, long nowNanos) {
    List<KubernetesPod> pods = new ArrayList<>(observed);
    pods.sort(Comparator.comparing(KubernetesPod::key));
    Map<String, Tracked> next = new HashMap<>();
    Map<String, String> names = new HashMap<>();
    List<PodSpec> out = new ArrayList<>();
    List<Problem> problems = new ArrayList<>();
    Set<String> uids = new HashSet<>();
    for (KubernetesPod p : pods) {
      uids.add(p.uid());
      Tracked t = p.problem() == null ? track(p, tracked.get(p.key()), nowNanos) : null;
      Problem problem = p.problem();
      if (t != null && names.putIfAbsent(t.spec().name(), p.key()) != null) {
        problem = duplicate(p, t.spec().name(), names.get(t.spec().name()));
        t = null;
      }
      if (t != null) {
        next.put(p.key(), t);
        out.add(t.spec());
        reported.remove(p.uid());
      } else if (problem != null && !problem.equals(reported.put(p.uid(), problem))) {
        problems.add(problem);
      }
    }
    reported.keySet().retainAll(uids);
    tracked = next;
    return new Round(List.copyOf(out), List.copyOf(problems));
  }

  /** Whether the pod is a stream that is not ready now. */
  boolean notReady(String key) {
    Tracked t = tracked.get(key);
    return t != null && t.notReadySince() != READY;
  }

  /** What the pod is now, as a stream, or {@code null} when it is none. */
  private Tracked track(KubernetesPod p, Tracked before, long now) {
    if (p.ready() && p.spec() != null) {
      return new Tracked(p.spec(), p.uid(), p.ip(), READY);
    }
    if (before == null
        || p.spec() == null
        || !before.uid().equals(p.uid())
        || !before.ip().equals(p.ip())
        || !before.spec().incarnation().equals(p.incarnation())) {
      return null;
    }
    long since = before.notReadySince() == READY ? now : before.notReadySince();
    return now - since < notReadyAfterNanos
        ? new Tracked(before.spec(), before.uid(), before.ip(), since)
        : null;
  }

  private static Problem duplicate(KubernetesPod p, String name, String holder) {
    return new Problem(
        "duplicate_name",
        "pod "
            + p.key()
            + " would be named '"
            + name
            + "' in the index, as pod "
            + holder
            + " already is: watch one namespace per ingester fleet, or name pods by IP"
            + " (--kubernetes-pod-name ip)");
  }
}
