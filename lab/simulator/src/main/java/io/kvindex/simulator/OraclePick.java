package io.kvindex.simulator;

import io.kvindex.index.PodMatch;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The pick policy an {@linkplain PodRouter#oracle oracle} routes with: a router's own, given the
 * true matches instead of the index's, so that the oracle differs from that router only in what it
 * knows. Implementations must be thread-safe.
 *
 * <p>The router's standard policy lives in the router module, which depends on this one; it is
 * offered as a {@link ServiceLoader} service (the demo module registers it), found by {@link
 * #standard()}.
 */
@FunctionalInterface
public interface OraclePick {

  /**
   * Picks one candidate.
   *
   * @param affinityKey the engine's hash of the prompt's first full block (0 if none), the key a
   *     router's tie-break hashes
   * @param matches one entry per candidate, in candidate order, scored from the pods' true caches
   * @param load each candidate's load (requests among the last few routed)
   * @return the name of one of the candidates
   */
  String pick(long affinityKey, List<PodMatch> matches, Map<String, Double> load);

  /**
   * Picks one candidate, knowing the prompt's blocks: what a router's tie-break hashes past a
   * shared prefix, and what an estimate of the prompt's uncached tokens needs. The default ignores
   * them ({@link #pick(long, List, Map)}).
   *
   * @param blockKeys chained keys of the prompt's full blocks (each depends on every token before
   *     it), one per block of {@code blockSize} tokens
   */
  default String pick(
      long affinityKey,
      long[] blockKeys,
      int blockSize,
      List<PodMatch> matches,
      Map<String, Double> load) {
    return pick(affinityKey, matches, load);
  }

  /**
   * The router's standard pick policy, as registered on the class path.
   *
   * @throws IllegalStateException if none is (run through {@code scripts/kvindex}, whose class path
   *     holds it)
   */
  static OraclePick standard() {
    return ServiceLoader.load(OraclePick.class)
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "the oracle router needs the router's pick policy on the class path (the"
                        + " kvindex-demo module registers it); run it through scripts/kvindex"));
  }
}
