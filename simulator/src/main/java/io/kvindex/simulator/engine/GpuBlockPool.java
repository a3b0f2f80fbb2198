package io.kvindex.simulator.engine;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongConsumer;

/**
 * vLLM's GPU block pool, reduced to what decides events: a fixed number of block slots, a free
 * queue in eviction order (head first), and the map from block hash to the slot that caches it. Not
 * thread-safe; its engine serialises access.
 *
 * <p>As in vLLM, a freed block keeps its hash (it stays a prefix-cache hit) until it is taken from
 * the head of the free queue for a new allocation, which evicts it.
 */
final class GpuBlockPool {
  private static final long NO_HASH = 0L;

  private final int capacity;
  private final long[] slotHash;
  private final boolean[] slotHasHash;
  private final LinkedHashSet<Integer> freeQueue = new LinkedHashSet<>();
  private final Map<Long, Integer> cached = new HashMap<>();

  GpuBlockPool(int capacity) {
    this.capacity = capacity;
    this.slotHash = new long[capacity];
    this.slotHasHash = new boolean[capacity];
    for (int slot = 0; slot < capacity; slot++) {
      freeQueue.add(slot);
    }
  }

  int capacity() {
    return capacity;
  }

  /** The slot caching {@code hash}, or {@code -1}. */
  int lookup(long hash) {
    Integer slot = cached.get(hash);
    return slot == null ? -1 : slot;
  }

  boolean contains(long hash) {
    return cached.containsKey(hash);
  }

  /** Takes a cached slot into use (a prefix hit): it leaves the free queue. */
  void touch(int slot) {
    freeQueue.remove(slot);
  }

  /**
   * Takes the head of the free queue for a new block. If it still caches a hash, that hash is
   * evicted and handed to {@code evicted}.
   */
  int allocate(LongConsumer evicted) {
    Iterator<Integer> head = freeQueue.iterator();
    if (!head.hasNext()) {
      throw new IllegalStateException("no free GPU block; the request should have been rejected");
    }
    int slot = head.next();
    head.remove();
    if (slotHasHash[slot]) {
      long hash = slotHash[slot];
      cached.remove(hash);
      slotHasHash[slot] = false;
      slotHash[slot] = NO_HASH;
      evicted.accept(hash);
    }
    return slot;
  }

  /**
   * Marks an in-use slot as caching {@code hash}. Returns false (and caches nothing) when another
   * slot already caches that hash, so each hash has at most one holder.
   */
  boolean cache(int slot, long hash) {
    if (cached.containsKey(hash)) {
      return false;
    }
    cached.put(hash, slot);
    slotHash[slot] = hash;
    slotHasHash[slot] = true;
    return true;
  }

  /** Returns a finished request's slots to the tail of the free queue, in the order given. */
  void free(int slot) {
    freeQueue.add(slot);
  }

  /** Forgets every cached hash (reset, sleep); slots keep their place in the free queue. */
  void clearHashes() {
    cached.clear();
    Arrays.fill(slotHasHash, false);
    Arrays.fill(slotHash, NO_HASH);
  }

  /** A snapshot of the cached hashes. */
  Set<Long> hashes() {
    return new TreeSet<>(cached.keySet());
  }
}
