package io.kvindex.index;

import io.kvindex.common.Check;
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
 * @param speculative true if part of {@code depth} rests only on routes a router recorded ({@link
 *     PrefixIndex#speculateAsync}) that the engine has not confirmed yet; such blocks count as GPU
 * @param groupTokens for a hybrid model's lookup, per cache group the hit in tokens its own rule
 *     found last for the pod's best rank (full attention: its prefix; the others: the hit they
 *     accept), the pod's {@code depth} being the hit all groups agree on; empty otherwise
 */
public record PodMatch(
    String pod,
    int depth,
    int gpuDepth,
    int gpuCpuDepth,
    double score,
    Map<Integer, Integer> rankDepths,
    boolean speculative,
    Map<Integer, Integer> groupTokens) {

  public PodMatch {
    Check.notNull(pod, "pod");
    groupTokens =
        groupTokens == null || groupTokens.isEmpty()
            ? Map.of()
            : groupTokens instanceof GroupTokens
                ? groupTokens // immutable and in group order already
                : java.util.Collections.unmodifiableMap(new TreeMap<>(groupTokens));
    // One rank (or none) is the common case: an immutable copy is already in rank order.
    rankDepths =
        rankDepths.size() <= 1
            ? Map.copyOf(rankDepths)
            : java.util.Collections.unmodifiableMap(new TreeMap<>(rankDepths));
  }

  /** A match of one cache group. */
  public PodMatch(
      String pod,
      int depth,
      int gpuDepth,
      int gpuCpuDepth,
      double score,
      Map<Integer, Integer> rankDepths,
      boolean speculative) {
    this(pod, depth, gpuDepth, gpuCpuDepth, score, rankDepths, speculative, Map.of());
  }

  /** A match resting on confirmed entries only. */
  public PodMatch(
      String pod,
      int depth,
      int gpuDepth,
      int gpuCpuDepth,
      double score,
      Map<Integer, Integer> rankDepths) {
    this(pod, depth, gpuDepth, gpuCpuDepth, score, rankDepths, false);
  }

  /**
   * A {@code groupTokens} map made without copying: per cache group {@code groups[i]} (strictly
   * ascending), {@code tokens[i]}. Both arrays are kept as they are and must not change after.
   */
  public static Map<Integer, Integer> groupTokens(int[] groups, int[] tokens) {
    return new GroupTokens(groups, tokens);
  }

  /** A pod holding nothing of the prompt. */
  public static PodMatch none(String pod) {
    return new PodMatch(pod, 0, 0, 0, 0.0, Map.of(), false, Map.of());
  }
}
