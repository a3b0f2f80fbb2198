package io.kvindex.index;

import java.util.Map;
import java.util.TreeMap;

/**
 * How much of a prompt's prefix one pod holds. A pod's figures are the best of its data-parallel
 * ranks (each rank is its own cache). Immutable and thread-safe.
 *
 * @param pod the pod
 * @param depth consecutive blocks from block 0 held in any tier
 * @param gpuDepth consecutive blocks from block 0 held in GPU
 * @param gpuCpuDepth consecutive blocks from block 0 held in GPU or CPU
 * @param score the sum, over the {@code depth} matched blocks, of the weight of the best tier each
 *     block is held in
 * @param rankDepths {@code depth} per data-parallel rank that holds at least block 0
 */
public record PodMatch(
    String pod,
    int depth,
    int gpuDepth,
    int gpuCpuDepth,
    double score,
    Map<Integer, Integer> rankDepths) {

  public PodMatch {
    Names.notNull(pod, "pod");
    rankDepths = java.util.Collections.unmodifiableMap(new TreeMap<>(rankDepths));
  }

  /** A pod holding nothing of the prompt. */
  public static PodMatch none(String pod) {
    return new PodMatch(pod, 0, 0, 0, 0.0, Map.of());
  }
}
