package io.kvindex.router;

import java.util.Map;
import java.util.Objects;

/**
 * How much of one request's prompt one candidate pod already holds. Immutable, so thread-safe.
 *
 * <p>Depths count whole blocks from the start of the prompt; the tier depths are cumulative: a
 * block counts towards {@code gpuCpuBlocks} when the pod holds it on the GPU or in CPU memory, and
 * towards {@code matchedBlocks} when it holds it on any tier.
 *
 * @param pod the pod name
 * @param matchedBlocks the longest prefix the pod holds on any tier, in blocks
 * @param matchedTokens {@code matchedBlocks} times the model's block size
 * @param gpuBlocks the longest prefix held on the GPU
 * @param gpuCpuBlocks the longest prefix held on the GPU or CPU
 * @param score the tier-weighted score (each matched block weighted by the tier it is on)
 * @param speculative whether part of the match comes only from routes this router recorded and no
 *     engine has confirmed yet
 * @param rankBlocks the longest GPU prefix per data-parallel rank
 */
public record PodScore(
    String pod,
    int matchedBlocks,
    int matchedTokens,
    int gpuBlocks,
    int gpuCpuBlocks,
    double score,
    boolean speculative,
    Map<Integer, Integer> rankBlocks) {

  public PodScore {
    Objects.requireNonNull(pod, "pod");
    Checks.nonNegative(matchedBlocks, "matchedBlocks");
    Checks.nonNegative(matchedTokens, "matchedTokens");
    Checks.nonNegative(gpuBlocks, "gpuBlocks");
    Checks.nonNegative(gpuCpuBlocks, "gpuCpuBlocks");
    rankBlocks = Map.copyOf(Objects.requireNonNull(rankBlocks, "rankBlocks"));
  }

  /** A pod that holds nothing of the prompt. */
  public static PodScore miss(String pod) {
    return new PodScore(pod, 0, 0, 0, 0, 0.0, false, Map.of());
  }
}
