package io.kvindex.index;

import io.kvindex.common.Check;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * The settings of an index, as {@link PrefixIndexBuilder} checked them. Immutable and thread-safe.
 *
 * @param indexName the index's name (several indexes can share a Redis)
 * @param groups how many index groups pods are spread over
 * @param tierWeights each tier's weight in {@link PodMatch#score()}
 * @param podTtl how long a pod stays live after its last applied batch
 * @param gcBudget hash fields one garbage-collection call examines
 * @param segmentSlots blocks one segment field may describe before it overflows
 * @param departedRetention how long a departed pod's records are kept past its liveness deadline
 * @param applyChunkBlocks blocks one apply call writes at most; a larger batch takes several
 */
public record IndexConfig(
    String indexName,
    int groups,
    Map<Tier, Double> tierWeights,
    Duration podTtl,
    int gcBudget,
    int segmentSlots,
    Duration departedRetention,
    int applyChunkBlocks) {

  public IndexConfig {
    Check.name(indexName, "indexName");
    tierWeights = Collections.unmodifiableMap(new EnumMap<>(tierWeights));
  }

  /** The weight of the best tier in a tier bit mask (0 for none). */
  public double bestWeight(int tierBits) {
    double best = 0;
    for (Tier tier : Tier.values()) {
      if ((tierBits & tier.bit()) != 0) {
        best = Math.max(best, tierWeights.get(tier));
      }
    }
    return best;
  }
}
