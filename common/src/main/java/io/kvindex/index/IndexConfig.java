package io.kvindex.index;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;

/** The immutable settings of an index (see {@link PrefixIndexBuilder}). */
record IndexConfig(
    String indexName,
    int groups,
    KeyMode defaultKeyMode,
    Map<String, KeyMode> keyModes,
    Map<Tier, Double> tierWeights,
    Duration podTtl,
    int gcBudget,
    int segmentSlots,
    Duration departedRetention) {

  IndexConfig {
    keyModes = Map.copyOf(keyModes);
    tierWeights = java.util.Collections.unmodifiableMap(new EnumMap<>(tierWeights));
  }

  KeyMode keyMode(String model) {
    return keyModes.getOrDefault(model, defaultKeyMode);
  }

  /** The weight of the best tier in a tier bit mask (0 for none). */
  double bestWeight(int tierBits) {
    double best = 0;
    for (Tier tier : Tier.values()) {
      if ((tierBits & tier.bit()) != 0) {
        best = Math.max(best, tierWeights.get(tier));
      }
    }
    return best;
  }
}
