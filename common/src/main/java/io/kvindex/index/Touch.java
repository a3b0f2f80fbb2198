package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * One observed request on a pod whose evictions the index infers ({@link PrefixIndex#touchAsync}):
 * the prompt's block keys from block 0, which the pod's engine holds once the request is served
 * (the blocks it hit and the ones it computed), the data-parallel rank the router credited, and how
 * far the index's prediction for the pod was from what the engine reported. Immutable by
 * convention: the array is neither copied nor changed.
 *
 * @param rank the data-parallel rank the request went to, or -1 when the gateway did not know it
 *     (then it is credited to the pod's only rank, if it has one)
 * @param blockKeys the prompt's block keys, block 0 first
 * @param errorBlocks the prediction's error in blocks, predicted minus reported: positive when the
 *     index listed blocks the engine no longer held
 */
public record Touch(int rank, long[] blockKeys, int errorBlocks) {
  public Touch {
    Check.atLeast(rank, -1, "rank");
    Check.notNull(blockKeys, "blockKeys");
  }
}
