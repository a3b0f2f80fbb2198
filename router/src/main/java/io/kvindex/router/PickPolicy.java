package io.kvindex.router;

import io.kvindex.common.Check;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Chooses one pod for a request from its {@link Scores} and the pods' current load. Implementations
 * must be thread-safe; {@link #estimatedTtft()} (the default) and {@link #standard()} are.
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

  /** The name of {@link #estimatedTtft} in settings, the default. */
  String ESTIMATED_TTFT = "estimated-ttft";

  /** The name of {@link #standard} in settings: today's ordering before time was weighed. */
  String LONGEST_PREFIX = "longest-prefix";

  /**
   * A policy by its setting's name: {@value #ESTIMATED_TTFT} or {@value #LONGEST_PREFIX} ({@code
   * cost} is used by the first only).
   *
   * @throws IllegalArgumentException for another name, saying which there are
   */
  static PickPolicy named(
      String name, double imbalanceAbsolute, double imbalanceRatio, TtftCostModel cost) {
    return switch (name) {
      case ESTIMATED_TTFT -> estimatedTtft(imbalanceAbsolute, imbalanceRatio, cost);
      case LONGEST_PREFIX -> standard(imbalanceAbsolute, imbalanceRatio);
      default ->
          throw new IllegalArgumentException(
              "the pick policy is "
                  + ESTIMATED_TTFT
                  + " (the default) or "
                  + LONGEST_PREFIX
                  + ", got '"
                  + name
                  + "'");
    };
  }

  /**
   * The default policy: the estimated time to first token with the default guard and {@link
   * TtftCostModel#DEFAULT}.
   */
  static PickPolicy estimatedTtft() {
    return estimatedTtft(
        DEFAULT_IMBALANCE_ABSOLUTE, DEFAULT_IMBALANCE_RATIO, TtftCostModel.DEFAULT);
  }

  /**
   * The time-aware policy (the {@code estimated-ttft} setting, the default): what the engine will
   * spend before the first token, per candidate.
   *
   * <ol>
   *   <li>The load-imbalance guard of {@link #standard(double, double)}.
   *   <li>The least estimated time to first token: {@code cost}'s seconds for the prompt tokens
   *       queued on the pod ({@link LoadSignal#queuedTokens}, or its load times {@link
   *       TtftCostModel#tokensPerLoad}) plus this prompt's tokens past the prefix it holds
   *       (tier-weighted, as the score is). A warm pod with a queue loses to a colder idle one once
   *       the queue costs more than the cache saves.
   *   <li>Among pods tied on the estimate, {@link #standard(double, double)}'s ordering: longest
   *       prefix, least load, the deterministic tie-break.
   * </ol>
   *
   * When the index is unavailable, or the prompt has no full block, the estimate is skipped and the
   * standard ordering decides.
   */
  static PickPolicy estimatedTtft(
      double imbalanceAbsolute, double imbalanceRatio, TtftCostModel cost) {
    return new EstimatedTtftPickPolicy(
        Check.atLeast(imbalanceAbsolute, 0.0, "imbalanceAbsolute"),
        Check.atLeast(imbalanceRatio, 1.0, "imbalanceRatio"),
        Check.notNull(cost, "cost"));
  }

  /**
   * Today's ordering before time was weighed (the {@code longest-prefix} setting) with the default
   * guard: 16 load units and a ratio of 1.5.
   */
  static PickPolicy standard() {
    return standard(DEFAULT_IMBALANCE_ABSOLUTE, DEFAULT_IMBALANCE_RATIO);
  }

  /**
   * The longest-prefix ordering (the {@code longest-prefix} setting), in four steps.
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
