package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.index.PodLiveness;
import io.kvindex.index.PodMatch;
import java.util.List;

/**
 * Why {@link KvRouter#pick} chose as it did, candidate by candidate: what the index holds of the
 * prompt in each tier, the load the policy saw, the policy's verdict, and the pod record the lookup
 * counted the pod's blocks under. Immutable, so thread-safe.
 *
 * @param pick what the policy chose
 * @param candidates one per candidate, in candidate order
 */
public record Explanation(Pick pick, List<Candidate> candidates) {

  public Explanation {
    Check.notNull(pick, "pick");
    candidates = List.copyOf(candidates);
  }

  /**
   * One candidate.
   *
   * @param pod the pod
   * @param match its depths per tier ({@link PodMatch#none} when the index was unavailable)
   * @param load the load the policy saw
   * @param verdict what the policy made of it
   * @param liveness its pod record as the index holds it, read right after the lookup (a lookup
   *     counts a pod's blocks only while the record is live), or null when Redis did not answer
   */
  public record Candidate(
      String pod, PodMatch match, double load, Pick.Verdict verdict, PodLiveness liveness) {
    public Candidate {
      Check.notNull(pod, "pod");
      Check.notNull(match, "match");
      Check.notNull(verdict, "verdict");
    }
  }
}
