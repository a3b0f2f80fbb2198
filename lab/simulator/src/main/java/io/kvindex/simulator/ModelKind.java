package io.kvindex.simulator;

import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The KV-cache groups a simulated engine has, as vLLM builds them for the model it serves. Group 0
 * is always full attention in blocks of the pod's block size, which is also the hash block. A
 * hybrid kind adds group 1, which publishes its own stores and removes (with {@code group_idx},
 * {@code kv_cache_spec_kind} and, for a sliding window, {@code kv_cache_spec_sliding_window}) and,
 * as vLLM's default retention (interval 0, since vLLM PR 52216) keeps them, holds only what the hit
 * rule needs at each request's replay boundary ({@code floor((prompt - 1) / alignment) *
 * alignment}) and at its shared-prefix junction (the full-attention hit, when the engine's hit fell
 * short of it).
 */
public enum ModelKind {
  /** One full-attention group: a dense model (Llama, Qwen3). The default. */
  FULL("full", null, 0, 1),
  /**
   * gpt-oss-like: full attention beside a sliding window of 128 tokens in blocks of the pod's block
   * size. The window's group keeps the {@code cdiv(W - 1, B)} blocks ending at each kept boundary;
   * the blocks a request leaves behind its window are freed without {@code BlockRemoved} (still
   * cached until evicted).
   */
  SLIDING_WINDOW("swa", "sliding_window", 128, 1),
  /**
   * A Mamba hybrid (Qwen3-Next, Nemotron-H style) in align mode: full attention beside a Mamba
   * group whose blocks are 4 of the pod's blocks. Its block being larger than the hash block, vLLM
   * turns fine-grained hits on: a state is kept at a hash block's boundary, as a whole Mamba
   * block's end-state ({@code block_size} the Mamba block) or a partial tail entry ({@code
   * block_size} the hash block).
   */
  MAMBA("mamba", "mamba", 0, 4);

  private final String option;
  private final String specKind;
  private final int window;
  private final int blocksPerGroupBlock;

  ModelKind(String option, String specKind, int window, int blocksPerGroupBlock) {
    this.option = option;
    this.specKind = specKind;
    this.window = window;
    this.blocksPerGroupBlock = blocksPerGroupBlock;
  }

  /** The name {@code --model-kind} takes: full, swa or mamba. */
  public String option() {
    return option;
  }

  /**
   * The kind named {@code name} (full, swa, mamba).
   *
   * @throws IllegalArgumentException naming the kinds there are
   */
  public static ModelKind named(String name) {
    for (ModelKind k : values()) {
      if (k.option.equals(name == null ? null : name.toLowerCase(Locale.ROOT))) {
        return k;
      }
    }
    throw new IllegalArgumentException(
        "the model kind must be one of "
            + Arrays.stream(values()).map(ModelKind::option).collect(Collectors.joining(", "))
            + ", got "
            + name);
  }

  /** Whether the engine has more than one cache group. */
  public boolean hybrid() {
    return specKind != null;
  }

  /** Group 1's {@code kv_cache_spec_kind}, or {@code null} for {@link #FULL}. */
  public String specKind() {
    return specKind;
  }

  /** Group 1's {@code kv_cache_spec_sliding_window}, or {@code null} when it has none. */
  public Integer window() {
    return window == 0 ? null : window;
  }

  /** Group 1's block size, in tokens, for a pod of {@code blockSize}-token blocks. */
  public int groupBlockSize(int blockSize) {
    return blockSize * blocksPerGroupBlock;
  }

  /**
   * The {@code kv_cache_size_tokens} vLLM reports for a pool of {@code capacityBlocks} blocks of
   * {@code blockSize} tokens: the pool over the blocks a request of {@code maxModelLen} tokens
   * takes in every group, times {@code maxModelLen} (vLLM's {@code get_kv_cache_capacity}). Full
   * attention takes {@code cdiv(L, B)}; a sliding window {@code cdiv(min(W - 1 +
   * maxNumBatchedTokens, L), B) + 1}; a Mamba group in align mode two state blocks (vLLM pads a
   * state to one block of the pool).
   */
  public long kvCacheSizeTokens(
      int capacityBlocks, int blockSize, int maxModelLen, int maxNumBatchedTokens) {
    long perRequest = ceilDiv(maxModelLen, blockSize);
    if (this == SLIDING_WINDOW) {
      perRequest += ceilDiv(Math.min(window - 1 + maxNumBatchedTokens, maxModelLen), blockSize) + 1;
    } else if (this == MAMBA) {
      perRequest += 2;
    }
    return (long) ((double) capacityBlocks / perRequest * maxModelLen);
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }

  /** The cache groups as the engine's events describe them. */
  public CacheLayout layout(int blockSize) {
    Group full = new Group(0, "full_attention", blockSize, 0);
    if (!hybrid()) {
      return new CacheLayout(List.of(full));
    }
    return new CacheLayout(
        List.of(full, new Group(1, specKind, groupBlockSize(blockSize), window)));
  }
}
