package io.kvindex.simulator;

import io.kvindex.index.PodMatch;
import java.util.List;
import java.util.Map;

/**
 * The pick policy an {@linkplain PodRouter#oracle oracle} routes with: a router's own, given the
 * true matches instead of the index's, so that the oracle differs from that router only in what it
 * knows. Implementations must be thread-safe.
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
}
