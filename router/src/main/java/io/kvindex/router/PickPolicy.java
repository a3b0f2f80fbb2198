package io.kvindex.router;

import io.kvindex.common.Check;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Chooses one pod for a request from its {@link Scores} and the pods' current load. Implementations
 * must be thread-safe; {@link #standard()} is.
 */
@FunctionalInterface
public interface PickPolicy {

  /**
   * Picks one of {@code candidates}.
   *
   * @param scores the request's scores (may be {@linkplain Scores#indexAvailable() unavailable})
   * @param candidates the pods the request may go to; not empty, no duplicates
   * @param load the pods' current load
   * @throws IllegalArgumentException if {@code candidates} is empty or repeats a pod
   */
  Pick pick(Scores scores, Collection<String> candidates, LoadSignal load);

  /**
   * What this policy makes of each candidate for a {@link #pick} with the same arguments: the
   * chosen pod is {@link Pick.Verdict#CHOSEN}, the others say which step passed them over. The
   * default says only which pod was chosen ({@link Pick.Verdict#NOT_CHOSEN} for the rest).
   *
   * @return per candidate, in candidate order
   */
  default Map<String, Pick.Verdict> verdicts(
      Scores scores, Collection<String> candidates, LoadSignal load) {
    Pick pick = pick(scores, candidates, load);
    Map<String, Pick.Verdict> out = new LinkedHashMap<>();
    for (String pod : candidates) {
      out.put(pod, pod.equals(pick.pod()) ? Pick.Verdict.CHOSEN : Pick.Verdict.NOT_CHOSEN);
    }
    return out;
  }

  /** The default overload guard's load units above the least loaded pod. */
  double DEFAULT_IMBALANCE_ABSOLUTE = 16.0;

  /** The default overload guard's factor over the least loaded pod. */
  double DEFAULT_IMBALANCE_RATIO = 1.5;

  /** The standard policy with the default guard: 16 load units and a ratio of 1.5. */
  static PickPolicy standard() {
    return standard(DEFAULT_IMBALANCE_ABSOLUTE, DEFAULT_IMBALANCE_RATIO);
  }

  /**
   * The standard policy, in four steps.
   *
   * <ol>
   *   <li>Load-imbalance guard: with {@code min} the lowest load among the candidates, a pod is
   *       overloaded when its load exceeds {@code min + imbalanceAbsolute} and also exceeds {@code
   *       min * imbalanceRatio}; overloaded pods are left out (the least loaded pod never is).
   *   <li>Longest prefix: the highest tier-weighted score wins, then the most matched blocks.
   *   <li>Least load among the pods still tied.
   *   <li>Deterministic tie-break: rendezvous hashing with the pod name of the prompt's first
   *       block, and, when the tied pods hold part of the prompt, of the first block past that
   *       part: the same prompt goes to the same pod, and prompts that share a held prefix (a
   *       system prompt) spread by what follows it instead of piling onto one pod.
   * </ol>
   *
   * When the index is unavailable, step 2 is skipped.
   *
   * @param imbalanceAbsolute load units above the minimum a pod may carry before it can count as
   *     overloaded; {@code >= 0}
   * @param imbalanceRatio factor over the minimum load a pod may carry before it can count as
   *     overloaded; {@code >= 1}
   */
  static PickPolicy standard(double imbalanceAbsolute, double imbalanceRatio) {
    return new StandardPickPolicy(
        Check.atLeast(imbalanceAbsolute, 0.0, "imbalanceAbsolute"),
        Check.atLeast(imbalanceRatio, 1.0, "imbalanceRatio"));
  }
}
