package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * What the owner of a stream whose evictions are inferred leaves in the index for the stream's next
 * owner ({@link PrefixIndex#handOverInferenceAsync}): the size its model found the engine to hold,
 * and the removals it decided that the index has not applied yet, which the next owner's model
 * would not decide again (it starts from the engine's ring, without the touches and the history the
 * former one had). Immutable by convention: the array is neither copied nor changed.
 *
 * @param sizeBlocks the model's size, in blocks, at least 1
 * @param removals blocks the model evicted whose removal the index has not applied, the oldest
 *     first
 */
public record InferenceHandover(int sizeBlocks, long[] removals) {
  /** Removals handed over at most: a model that has more hands over its oldest. */
  public static final int MAX_REMOVALS = 4096;

  public InferenceHandover {
    Check.atLeast(sizeBlocks, 1, "sizeBlocks");
    Check.notNull(removals, "removals");
    Check.between(removals.length, 0, MAX_REMOVALS, "removals");
  }
}
