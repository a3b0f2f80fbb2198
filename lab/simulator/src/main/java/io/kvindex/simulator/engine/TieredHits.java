package io.kvindex.simulator.engine;

import io.kvindex.index.Tier;
import io.kvindex.simulator.CachedPrefix;
import io.kvindex.simulator.InferenceRequest;

/**
 * The prefix-cache hits of a full-attention model on an {@link Engine}: the longest run of cached
 * prompt blocks on the GPU, then on the CPU tier when there is one. Not thread-safe: the engine's
 * lock guards every call; one instance per pool (a restart makes a new one).
 */
final class TieredHits {
  private final GpuBlockPool pool;
  private final CpuTier cpu;

  /** Hits in {@code pool}, then in {@code cpu} ({@code null} when the engine has no CPU tier). */
  TieredHits(GpuBlockPool pool, CpuTier cpu) {
    this.pool = pool;
    this.cpu = cpu;
  }

  /**
   * What the engine holds of the request's prompt now: its full blocks' tiers from block 0 up to
   * the first one it does not hold, hashed with {@code hasher} no further than that.
   */
  CachedPrefix prefix(InferenceRequest request, ChainHasher hasher) {
    int[] prompt = request.promptTokens();
    long[] hashes =
        hasher.hashesWhile(
            prompt, request.loraName(), request.cacheSalt(), h -> tiersHolding(h) != 0);
    int held = hashes.length;
    if (held > 0 && tiersHolding(hashes[held - 1]) == 0) {
      held--;
    }
    int[] tiers = new int[held];
    for (int i = 0; i < held; i++) {
      tiers[i] = tiersHolding(hashes[i]);
    }
    return new CachedPrefix(hashes.length == 0 ? 0 : hashes[0], tiers);
  }

  private int tiersHolding(long hash) {
    int bits = pool.contains(hash) ? Tier.GPU.bit() : 0;
    return cpu != null && cpu.contains(hash) ? bits | Tier.CPU.bit() : bits;
  }

  /**
   * Takes a waiting sequence's GPU and CPU hits into use and sets its KV tokens to them; returns
   * the tokens its step computes, or -1 (and changes nothing) when the free blocks do not suffice.
   */
  int admit(Sequence s, int budget) {
    int maxHit = (s.target() - 1) / s.blockSize;
    int gpuHits = 0;
    int queuedHits = 0;
    while (gpuHits < maxHit && gpuHits < s.hashes.length) {
      int slot = pool.lookup(s.hashes[gpuHits]);
      if (slot < 0) {
        break;
      }
      queuedHits += pool.isFree(slot) ? 1 : 0;
      gpuHits++;
    }
    int hits = gpuHits;
    while (cpu != null && hits < maxHit && hits < s.hashes.length && cpu.contains(s.hashes[hits])) {
      hits++;
    }
    int kv = hits * s.blockSize;
    int chunk = Math.min(s.target() - kv, budget);
    int fresh = Engine.ceilDiv(kv + chunk, s.blockSize) - gpuHits;
    if (fresh + queuedHits > pool.freeCount()) {
      return -1;
    }
    for (int b = 0; b < gpuHits; b++) {
      int slot = pool.lookup(s.hashes[b]);
      pool.touch(slot);
      s.slots.add(slot);
    }
    for (int b = gpuHits; b < hits; b++) {
      cpu.touch(s.hashes[b]);
    }
    s.kv = kv;
    s.cachedBlocks = gpuHits;
    return chunk;
  }
}
