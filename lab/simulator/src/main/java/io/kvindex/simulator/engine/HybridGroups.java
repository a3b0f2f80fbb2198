package io.kvindex.simulator.engine;

import io.kvindex.event.ExtraKey;
import io.kvindex.index.HybridHit;
import io.kvindex.index.Tier;
import io.kvindex.simulator.CachedPrefix;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeSet;

/**
 * A hybrid model's cache group 1 (sliding window or Mamba) on an {@link Engine}'s pool, shared with
 * full attention (group 0): vLLM's coordinator hit over both groups, and the group-1 blocks a
 * request allocates, keeps, caches and frees at each step. Not thread-safe: the engine's lock
 * guards every call; one instance per pool (a restart makes a new one).
 */
final class HybridGroups {
  /*
   * Implementation notes.
   *
   * The hit is vLLM's coordinator rule (the index's HybridHit over what each group caches), and a
   * request keeps group 1's blocks only where vLLM's default retention does: at its replay boundary
   * and at its junction (the full-attention hit its engine hit fell short of). A sliding-window
   * request frees the blocks behind its window at each step, hashed ones to the free queue's tail
   * (still cached, no BlockRemoved), unhashed ones to its head. A Mamba request holds one running
   * state block; a step ends exactly at each kept position (the align-mode chunk split), where the
   * state block is hashed with the fine hash there and stored, then freed a step later.
   */
  private final ModelKind kind;
  private final HybridHit rule;
  private final int blockSize;
  private final int groupBlock;
  private final int windowBlocks;
  private final GpuBlockPool pool;
  private final StepEvents events;
  private final GpuBlockPool.Evicted evicted;

  HybridGroups(
      ModelKind kind,
      HybridHit rule,
      int blockSize,
      GpuBlockPool pool,
      StepEvents events,
      GpuBlockPool.Evicted evicted) {
    this.kind = kind;
    this.rule = rule;
    this.blockSize = blockSize;
    this.groupBlock = kind.groupBlockSize(blockSize);
    this.windowBlocks = kind.window() == null ? 0 : Engine.ceilDiv(kind.window() - 1, blockSize);
    this.pool = pool;
    this.events = events;
    this.evicted = evicted;
  }

  /**
   * A hybrid engine's hit for the prompt, as its coordinator would find it now (capped at the
   * prompt's length minus one), as that many GPU blocks.
   */
  CachedPrefix prefix(InferenceRequest request, ChainHasher hasher) {
    int[] prompt = request.promptTokens();
    long[] hashes =
        hasher.hashesWhile(
            prompt, request.loraName(), request.cacheSalt(), h -> pool.contains(h, 0));
    int hit = hit(hashes, prompt.length).tokens();
    int[] tiers = new int[hit / blockSize];
    Arrays.fill(tiers, Tier.GPU.bit());
    return new CachedPrefix(hashes.length == 0 ? 0 : hashes[0], tiers);
  }

  /**
   * vLLM's hybrid hit for a request of {@code tokens} tokens whose block hashes are {@code hashes}.
   */
  HybridHit.Hit hit(long[] hashes, int tokens) {
    HybridHit.Holds full = i -> i < hashes.length && pool.contains(hashes[i], 0);
    HybridHit.Holds group = i -> i < hashes.length && pool.contains(hashes[i], 1);
    return rule.hit(tokens, new HybridHit.Holds[] {full, group});
  }

  /**
   * Takes a waiting sequence's hits into use: the full-attention blocks of the coordinator's hit
   * over both groups, and group 1's window ending at it (or its state there). Sets the sequence's
   * KV tokens to the hit and returns the tokens its step computes (at most {@code budget}), or -1
   * (and changes nothing) when the free blocks do not suffice.
   */
  int admit(Sequence s, int budget) {
    int bs = s.blockSize;
    HybridHit.Hit hit = hit(s.hashes, s.target());
    int kv = hit.tokens();
    int hitBlocks = kv / bs;
    List<Integer> groupHits = new ArrayList<>();
    if (kind == ModelKind.SLIDING_WINDOW) {
      for (int b = Math.max(0, hitBlocks - windowBlocks); b < hitBlocks; b++) {
        groupHits.add(b);
      }
    } else if (kv > 0) {
      groupHits.add(hitBlocks - 1);
    }
    int queued = 0;
    for (int b = 0; b < hitBlocks; b++) {
      queued += pool.isFree(pool.lookup(s.hashes[b], 0)) ? 1 : 0;
    }
    for (int b : groupHits) {
      queued += pool.isFree(pool.lookup(s.hashes[b], 1)) ? 1 : 0;
    }
    TreeSet<Integer> kept = new TreeSet<>();
    int boundary = (s.request.promptLength() - 1) / rule.alignment() * rule.alignment();
    if (boundary > kv) {
      kept.add(boundary);
    }
    int junction = hit.groupTokens()[0];
    if (junction > kv) {
      kept.add(junction);
    }
    int chunk = Math.min(s.target() - kv, budget);
    if (kind == ModelKind.MAMBA) {
      Integer stop = kept.higher(kv);
      chunk = stop == null ? chunk : Math.min(chunk, stop - kv);
    }
    int fresh = Engine.ceilDiv(kv + chunk, bs) - hitBlocks;
    int groupFresh =
        kind == ModelKind.SLIDING_WINDOW ? fresh : 1 + (kept.contains(kv + chunk) ? 1 : 0);
    if (fresh + groupFresh + queued > pool.freeCount()) {
      return -1;
    }
    for (int b = 0; b < hitBlocks; b++) {
      int slot = pool.lookup(s.hashes[b], 0);
      pool.touch(slot);
      s.slots.add(slot);
    }
    for (int b : groupHits) {
      int slot = pool.lookup(s.hashes[b], 1);
      pool.touch(slot);
      if (kind == ModelKind.SLIDING_WINDOW) {
        s.windowSlots.put(b, slot);
      } else {
        s.spentStates.add(slot); // its state is copied into the running block, then let go
      }
    }
    if (kind == ModelKind.MAMBA) {
      s.stateSlot = pool.allocateForGroups(evicted);
    }
    s.kv = kv;
    s.cachedBlocks = hitBlocks;
    s.windowEnd = hitBlocks;
    s.windowCached = hitBlocks;
    s.keptEnds.clear();
    s.keptEnds.addAll(kept);
    return chunk;
  }

  /**
   * The most of {@code chunk} a running sequence's next step may compute: a Mamba hybrid's step
   * ends exactly at a kept state's position, so that the state there exists.
   */
  int chunk(Sequence s, int chunk) {
    if (kind != ModelKind.MAMBA) {
      return chunk;
    }
    Integer stop = s.keptEnds.higher(s.kv);
    return stop == null ? chunk : Math.min(chunk, stop - s.kv);
  }

  /**
   * Before a step of a running sequence: frees what group 1 no longer reads and returns the group-1
   * blocks the step's {@code chunk} tokens need.
   */
  int prepareStep(Sequence s, int chunk) {
    freeBehind(s);
    return kind == ModelKind.SLIDING_WINDOW
        ? Engine.ceilDiv(s.kv + chunk, s.blockSize) - s.windowEnd
        : s.keptEnds.contains(s.kv + chunk) ? 1 : 0;
  }

  /**
   * A sliding window frees the blocks wholly behind the window of the tokens computed so far
   * (vLLM's remove_skipped_blocks, last block first), a Mamba group the state blocks it no longer
   * reads.
   */
  private void freeBehind(Sequence s) {
    if (kind == ModelKind.SLIDING_WINDOW) {
      int skipped = Math.max(0, s.kv - kind.window() + 1) / s.blockSize;
      NavigableMap<Integer, Integer> behind = s.windowSlots.headMap(skipped, false);
      for (int slot : behind.descendingMap().values()) {
        pool.freeUnhashedFirst(slot);
      }
      behind.clear();
    } else {
      for (int slot : s.spentStates) {
        pool.free(slot);
      }
      s.spentStates.clear();
    }
  }

  /** A sliding window's blocks for the step's tokens (allocated before any group caches). */
  void allocate(Sequence s, int chunk) {
    if (kind != ModelKind.SLIDING_WINDOW) {
      return;
    }
    int end = Engine.ceilDiv(s.kv + chunk, s.blockSize);
    for (int b = s.windowEnd; b < end; b++) {
      s.windowSlots.put(b, pool.allocateForGroups(evicted));
    }
    s.windowEnd = Math.max(s.windowEnd, end);
  }

  /** Caches what group 1 keeps of the step's tokens (after full attention cached its blocks). */
  void cache(Sequence s, int chunk) {
    if (kind == ModelKind.SLIDING_WINDOW) {
      cacheWindow(s, chunk);
    } else if (kind == ModelKind.MAMBA) {
      cacheState(s, chunk);
    }
  }

  /**
   * The full blocks a sliding window keeps cached (those of the window ending at a kept position):
   * one BlockStored whose token ids span every block caching passed and whose hashes are the kept
   * ones', as vLLM's pool sends it for a sparse group.
   */
  private void cacheWindow(Sequence s, int chunk) {
    int bs = s.blockSize;
    int full = Math.min((s.kv + chunk) / bs, s.hashes.length);
    int from = s.windowCached;
    if (full <= from) {
      return;
    }
    List<Long> stored = new ArrayList<>();
    List<List<ExtraKey>> extraKeys = new ArrayList<>();
    for (int b = from; b < full; b++) {
      Integer slot = s.windowSlots.get(b);
      if (slot != null && keptInWindow(s, b) && pool.cache(slot, s.hashes[b], 1)) {
        stored.add(s.hashes[b]);
        extraKeys.add(StepEvents.extraKeys(s.request, b));
      }
    }
    s.windowCached = full;
    if (!stored.isEmpty()) {
      events.groupStored(
          s, stored, from == 0 ? null : s.hashes[from - 1], from * bs, full * bs, bs, extraKeys);
    }
  }

  /** Whether block {@code b} is in the window ending at one of the sequence's kept positions. */
  private boolean keptInWindow(Sequence s, int b) {
    for (int end : s.keptEnds) {
      int last = end / s.blockSize;
      if (b < last && b >= last - windowBlocks) {
        return true;
      }
    }
    return false;
  }

  /**
   * A Mamba step ending at a kept position: the running state block is cached under the fine hash
   * there (a whole Mamba block's end-state, or a partial tail entry in blocks of the hash block)
   * and stored; the next step computes into a new block, this one freed a step later.
   */
  private void cacheState(Sequence s, int chunk) {
    int end = s.kv + chunk;
    int unit = end / s.blockSize - 1;
    if (!s.keptEnds.contains(end) || unit < 0 || unit >= s.hashes.length) {
      return;
    }
    if (!pool.cache(s.stateSlot, s.hashes[unit], 1)) {
      return; // another block holds that state already
    }
    int size = end % groupBlock == 0 ? groupBlock : s.blockSize;
    int start = end - size;
    events.groupStored(
        s,
        List.of(s.hashes[unit]),
        start == 0 ? null : s.hashes[start / s.blockSize - 1],
        start,
        end,
        size,
        List.of(StepEvents.extraKeys(s.request, start / s.blockSize)));
    s.spentStates.add(s.stateSlot);
    s.stateSlot = pool.allocateForGroups(evicted);
  }

  /** Frees group 1's blocks of a sequence that ends or is preempted. */
  void release(Sequence s) {
    for (int slot : s.windowSlots.descendingMap().values()) {
      pool.freeUnhashedFirst(slot);
    }
    for (int slot : s.spentStates) {
      pool.free(slot);
    }
    if (s.stateSlot >= 0) {
      pool.freeUnhashedFirst(s.stateSlot);
    }
  }
}
