package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * One observed request on a pod whose evictions the index infers ({@link PrefixIndex#touchAsync}):
 * the prompt's block keys from block 0, how many of them the engine reported it served from its
 * cache, the data-parallel rank the router credited, how far the index's prediction for the pod was
 * from what the engine reported, and when the touch was recorded. What it says is a router's word,
 * not the engine's: an owner may restore from it only what its own model removed, within the cached
 * depth, and not when the engine published the block's removal after the touch. Immutable by
 * convention: the array is neither copied nor changed.
 *
 * @param rank the data-parallel rank the request went to, or -1 when the gateway did not know it
 *     (then it is credited to the pod's only rank, if it has one)
 * @param blockKeys the prompt's block keys, block 0 first
 * @param errorBlocks the prediction's error in blocks, predicted minus reported: positive when the
 *     index listed blocks the engine no longer held
 * @param cachedBlocks the blocks the engine reported it served from a cache, from block 0 (its
 *     {@code cached_tokens} in whole blocks); 0 when the router did not say
 * @param atMillis when the touch was recorded (Redis's clock, ms)
 */
public record Touch(int rank, long[] blockKeys, int errorBlocks, int cachedBlocks, long atMillis) {
  public Touch {
    Check.atLeast(rank, -1, "rank");
    Check.notNull(blockKeys, "blockKeys");
    Check.atLeast(cachedBlocks, 0, "cachedBlocks");
  }
}
