package io.kvindex.ingester.stream;

import io.kvindex.index.CacheLayout;

/**
 * An engine's KV-cache capacity as its {@code /metrics} reports it in {@code
 * vllm:cache_config_info}. Immutable.
 *
 * <p>{@code num_gpu_blocks} counts the blocks of one pool that every cache group of the model draws
 * from, so for a hybrid model (full attention beside a sliding window or Mamba) {@code
 * num_gpu_blocks × block_size} is not what full attention can hold. vLLM reports that as {@code
 * kv_cache_size_tokens}: the tokens the cache holds once each request takes its share in every
 * group ({@code num_gpu_blocks} over the blocks a request of {@code max_model_len} takes in all
 * groups, times {@code max_model_len}). The eviction model counts full-attention blocks, so it is
 * sized in those tokens, in the full-attention group's blocks.
 *
 * @param gpuBlocks {@code num_gpu_blocks}; 0 when unknown
 * @param blockSize {@code block_size} (vLLM: the smallest group's); 0 when unknown
 * @param sizeTokens {@code kv_cache_size_tokens}; 0 when the engine does not report it (vLLM before
 *     it, or {@code None})
 */
public record EngineCapacity(int gpuBlocks, int blockSize, long sizeTokens) {
  /** Nothing known yet. */
  public static final EngineCapacity UNKNOWN = new EngineCapacity(0, 0, 0);

  /** Whether the engine reported a capacity at all. */
  public boolean known() {
    return gpuBlocks > 0;
  }

  /**
   * The full-attention blocks the engine holds at most, for a model of this cache {@code layout}
   * (empty while none was learned): {@code kv_cache_size_tokens} in the full-attention group's
   * blocks when reported; else, for a hybrid model, the pool shared evenly by its groups (what vLLM
   * logged as the cache size before it reported one); else {@code num_gpu_blocks}. 0 when unknown.
   */
  public int fullAttentionBlocks(CacheLayout layout) {
    if (!known()) {
      return 0;
    }
    int groups = Math.max(1, layout.groups().size());
    int smallest = blockSize > 0 ? blockSize : Integer.MAX_VALUE;
    for (CacheLayout.Group g : layout.groups()) {
      smallest = Math.min(smallest, g.blockSize());
    }
    int fullBlock = layout.group(0).map(CacheLayout.Group::blockSize).orElse(blockSize);
    if (fullBlock <= 0) {
      return groups > 1 ? Math.max(1, gpuBlocks / groups) : gpuBlocks;
    }
    long tokens;
    if (sizeTokens > 0) {
      tokens = sizeTokens;
    } else if (groups > 1) {
      tokens = (long) (gpuBlocks / groups) * smallest;
    } else {
      return gpuBlocks;
    }
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, tokens / fullBlock));
  }
}
