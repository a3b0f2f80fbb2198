package io.kvindex.demo;

import io.kvindex.index.PodMatch;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.Scores;
import io.kvindex.simulator.OraclePick;
import java.util.List;
import java.util.Map;

/**
 * The router's standard pick policy for the simulator's oracle: the true matches go through the
 * very steps a kvindex router takes (overload guard, longest prefix, least load, tie-break), so the
 * oracle differs from kvindex only in what it knows. Registered as a {@link
 * java.util.ServiceLoader} service ({@link OraclePick#standard()}). Immutable, so thread-safe.
 */
public final class RouterOraclePick implements OraclePick {
  private final PickPolicy policy = PickPolicy.standard();

  @Override
  public String pick(long affinityKey, List<PodMatch> matches, Map<String, Double> load) {
    List<PodMatch> held = matches.stream().filter(m -> m.depth() > 0).toList();
    Scores scores =
        new Scores(
            Workloads.MODEL,
            0,
            new long[0],
            affinityKey,
            held,
            held.isEmpty() ? Scores.Outcome.MISS : Scores.Outcome.HIT);
    List<String> candidates = matches.stream().map(PodMatch::pod).toList();
    return policy.pick(scores, candidates, pod -> load.getOrDefault(pod, 0.0)).pod();
  }
}
