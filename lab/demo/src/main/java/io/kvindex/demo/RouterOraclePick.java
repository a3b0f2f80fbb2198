package io.kvindex.demo;

import io.kvindex.index.PodMatch;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.Scores;
import io.kvindex.simulator.OraclePick;
import java.util.List;
import java.util.Map;

/**
 * The router's default pick policy for the simulator's oracle: the true matches go through the very
 * steps a kvindex router takes (overload guard, estimated time to first token, longest prefix,
 * least load, tie-break past the held prefix), so the oracle differs from kvindex only in what it
 * knows. Registered as a {@link java.util.ServiceLoader} service ({@link OraclePick#standard()}).
 * Immutable, so thread-safe.
 */
public final class RouterOraclePick implements OraclePick {
  private final PickPolicy policy = PickPolicy.estimatedTtft();

  @Override
  public String pick(long affinityKey, List<PodMatch> matches, Map<String, Double> load) {
    return pick(affinityKey, new long[0], 0, matches, load);
  }

  /**
   * With the prompt's block keys, the policy's tie-break spreads prompts that share a held prefix
   * by the first block past it, as a router's does, and the estimate sees the prompt's length.
   */
  @Override
  public String pick(
      long affinityKey,
      long[] blockKeys,
      int blockSize,
      List<PodMatch> matches,
      Map<String, Double> load) {
    List<PodMatch> held = matches.stream().filter(m -> m.depth() > 0).toList();
    Scores scores =
        new Scores(
            Workloads.MODEL,
            blockSize,
            blockKeys,
            affinityKey,
            held,
            held.isEmpty() ? Scores.Outcome.MISS : Scores.Outcome.HIT);
    List<String> candidates = matches.stream().map(PodMatch::pod).toList();
    LoadSignal signal =
        new LoadSignal() {
          @Override
          public double load(String pod) {
            return load.getOrDefault(pod, 0.0);
          }

          @Override
          public double queuedTokens(String pod) {
            return 0; // the instant pods serve each request at once: nothing waits on them
          }
        };
    return policy.pick(scores, candidates, signal).pod();
  }
}
