package io.kvindex.router;

import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The documented default of {@link PickPolicy#estimatedTtft}: the overload guard, then the least
 * estimated time to first token, then {@link StandardPickPolicy}'s ordering among the pods tied on
 * the estimate. Immutable, so thread-safe.
 */
final class EstimatedTtftPickPolicy extends StepwisePickPolicy {
  private final double imbalanceAbsolute;
  private final double imbalanceRatio;
  private final TtftCostModel cost;
  private final StandardPickPolicy ties;

  EstimatedTtftPickPolicy(double imbalanceAbsolute, double imbalanceRatio, TtftCostModel cost) {
    this.imbalanceAbsolute = imbalanceAbsolute;
    this.imbalanceRatio = imbalanceRatio;
    this.cost = cost;
    this.ties = new StandardPickPolicy(imbalanceAbsolute, imbalanceRatio);
  }

  /** The estimate of one candidate, seconds. */
  double estimate(Scores scores, PodMatch match, LoadSignal load) {
    double prompt = (double) scores.queriedBlocks() * scores.blockSize();
    double cached = Math.min(prompt, match.score() * scores.blockSize());
    double queued = load.queuedTokens(match.pod());
    if (Double.isNaN(queued)) {
      double l = load.load(match.pod());
      queued = (l > 0 ? l : 0.0) * cost.tokensPerLoad();
    }
    return cost.seconds(queued, prompt - cached);
  }

  @Override
  Pick decide(
      Scores scores,
      Collection<String> candidates,
      LoadSignal load,
      Map<String, Pick.Verdict> verdicts) {
    StandardPickPolicy.check(candidates);
    if (!scores.indexAvailable() || scores.blockSize() <= 0 || scores.queriedBlocks() == 0) {
      // Nothing to weigh (no prompt length known): today's ordering alone.
      return ties(scores, candidates, load, verdicts);
    }
    Map<String, PodMatch> byPod =
        scores.pods().stream().collect(Collectors.toMap(PodMatch::pod, Function.identity()));
    List<String> guarded =
        StandardPickPolicy.notOverloaded(candidates, load, imbalanceAbsolute, imbalanceRatio);
    Map<String, Double> estimates = new LinkedHashMap<>();
    for (String pod : guarded) {
      estimates.put(pod, estimate(scores, byPod.getOrDefault(pod, PodMatch.none(pod)), load));
    }
    double best = estimates.values().stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    List<String> fastest = new ArrayList<>();
    estimates.forEach(
        (pod, e) -> {
          if (e == best) {
            fastest.add(pod);
          }
        });
    if (verdicts != null) {
      for (String pod : candidates) {
        verdicts.put(
            pod,
            !estimates.containsKey(pod) ? Pick.Verdict.OVERLOADED : Pick.Verdict.SLOWER_ESTIMATE);
      }
    }
    Pick pick = ties(scores, fastest, load, verdicts);
    PodMatch chosen = byPod.getOrDefault(pick.pod(), PodMatch.none(pick.pod()));
    for (String pod : guarded) {
      PodMatch other = byPod.getOrDefault(pod, PodMatch.none(pod));
      if (!fastest.contains(pod) && other.score() >= chosen.score()) {
        // The queue ahead outweighed a prefix at least as long: the estimate decided.
        return new Pick(
            pick.pod(), Pick.Reason.ESTIMATED_TTFT, pick.matchedBlocks(), pick.speculative());
      }
    }
    return pick;
  }

  private Pick ties(
      Scores scores,
      Collection<String> candidates,
      LoadSignal load,
      Map<String, Pick.Verdict> verdicts) {
    return ties.decide(scores, candidates, load, verdicts);
  }
}
