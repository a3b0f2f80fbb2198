package io.kvindex.router;

import io.kvindex.common.Check;

/**
 * What the engine reported for one routed request, beside what the index predicted for the pod it
 * went to: the input of the closed loop ({@link KvRouter#observe}). Immutable by convention (the
 * block key array is shared, never changed), so thread-safe.
 *
 * <p>Like is compared with like. vLLM reports, per request, {@code
 * usage.prompt_tokens_details.cached_tokens} (with {@code --enable-prompt-tokens-details}): the
 * prompt tokens it served from every cache tier it reads (GPU, CPU offload, a connector), never the
 * prompt's last token, which it always computes, so a prompt cached whole reports one block less.
 * The prediction is the index's all-tier depth ({@link Pick#matchedBlocks()}); both sides are
 * capped at {@code ⌊(promptTokens − 1) / blockSize⌋} blocks, the most the engine can report, and
 * the actual count is {@code ⌊cachedTokens / blockSize⌋}.
 *
 * @param model the model the request was for
 * @param pod the pod it went to
 * @param predictedBlocks the index's all-tier depth for that pod when it was scored: {@link
 *     Pick#matchedBlocks()}, or the pod's {@link io.kvindex.index.PodMatch#depth()}
 * @param promptTokens the prompt's length, vLLM's {@code usage.prompt_tokens}; at least 1
 * @param cachedTokens prompt tokens served from a cache, vLLM's {@code
 *     usage.prompt_tokens_details.cached_tokens}; 0 to {@code promptTokens}
 * @param blockKeys the prompt's block keys as scored ({@link Scores#blockKeys()}), or null when not
 *     known: a pod whose evictions the index infers needs them (the engine now holds those blocks),
 *     see {@link KvRouter#observe}; shared, not copied
 * @param rank the data-parallel rank of the pod the request went to, or -1 when the caller does not
 *     know it (a pod's own load balancing picks the rank): a pod whose evictions are inferred
 *     credits an unknown rank to its only rank, if it has one
 * @param speculative whether the prediction rested in part on speculative routes ({@link
 *     Pick#speculative()}, {@link io.kvindex.index.PodMatch#speculative()}): a route is a hint
 *     until the engine's own events arrive, so such a prediction that proves too high says nothing
 *     about the index's entries and is not judged for drift
 */
public record Observation(
    String model,
    String pod,
    int predictedBlocks,
    int promptTokens,
    int cachedTokens,
    long[] blockKeys,
    int rank,
    boolean speculative) {

  public Observation {
    Check.notBlank(model, "model");
    Check.notBlank(pod, "pod");
    Check.atLeast(predictedBlocks, 0, "predictedBlocks");
    Check.atLeast(promptTokens, 1, "promptTokens");
    Check.between(cachedTokens, 0, promptTokens, "cachedTokens");
    Check.atLeast(rank, -1, "rank");
  }

  /** An observation whose prediction rested on the engines' own entries only. */
  public Observation(
      String model,
      String pod,
      int predictedBlocks,
      int promptTokens,
      int cachedTokens,
      long[] blockKeys,
      int rank) {
    this(model, pod, predictedBlocks, promptTokens, cachedTokens, blockKeys, rank, false);
  }

  /** An observation without the prompt's block keys, of an unknown rank. */
  public Observation(
      String model, String pod, int predictedBlocks, int promptTokens, int cachedTokens) {
    this(model, pod, predictedBlocks, promptTokens, cachedTokens, null, -1, false);
  }

  /**
   * The observation of a request routed by {@code pick}, whose engine reported these counts,
   * without the prompt's block keys: prefer {@link #of(Scores, Pick, int, int)}.
   */
  public static Observation of(String model, Pick pick, int promptTokens, int cachedTokens) {
    Check.notNull(pick, "pick");
    return new Observation(
        model,
        pick.pod(),
        pick.matchedBlocks(),
        promptTokens,
        cachedTokens,
        null,
        -1,
        pick.speculative());
  }

  /**
   * The observation of a request scored as {@code scores} and routed by {@code pick}, whose engine
   * reported these counts, with the prompt's block keys; the rank is not known (-1).
   */
  public static Observation of(Scores scores, Pick pick, int promptTokens, int cachedTokens) {
    Check.notNull(scores, "scores");
    Check.notNull(pick, "pick");
    return new Observation(
        scores.model(),
        pick.pod(),
        pick.matchedBlocks(),
        promptTokens,
        cachedTokens,
        scores.blockKeys(),
        -1,
        pick.speculative());
  }

  /** The most blocks the engine can report cached: all but the prompt's last token's. */
  public int reportableBlocks(int blockSize) {
    return (promptTokens - 1) / Check.atLeast(blockSize, 1, "blockSize");
  }

  /** The prediction, capped at {@link #reportableBlocks}. */
  public int predicted(int blockSize) {
    return Math.min(predictedBlocks, reportableBlocks(blockSize));
  }

  /** What the engine reported, in whole blocks, capped at {@link #reportableBlocks}. */
  public int actual(int blockSize) {
    return Math.min(cachedTokens / blockSize, reportableBlocks(blockSize));
  }

  /**
   * The prediction's error in blocks: positive when the index thought the pod warmer than it was
   * (it lists blocks the engine no longer holds), negative when colder (the engine holds blocks the
   * index does not list), 0 when exact.
   */
  public int errorBlocks(int blockSize) {
    return predicted(blockSize) - actual(blockSize);
  }
}
