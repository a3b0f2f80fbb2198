package io.kvindex.simulator.engine;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongConsumer;

/**
 * The CPU offload tier: an LRU set of block hashes of fixed capacity that receives the blocks the
 * GPU pool evicts. Not thread-safe; its engine serialises access.
 */
final class CpuTier {
  private final int capacity;
  private final LinkedHashSet<Long> lru = new LinkedHashSet<>();

  CpuTier(int capacity) {
    this.capacity = capacity;
  }

  boolean contains(long hash) {
    return lru.contains(hash);
  }

  /** Marks a hit: the hash becomes most recently used. */
  void touch(long hash) {
    if (lru.remove(hash)) {
      lru.add(hash);
    }
  }

  /**
   * Offloads a block evicted from the GPU. Returns true when it was newly stored; evicts the least
   * recently used hash first when full, handing it to {@code evicted}.
   */
  boolean offer(long hash, LongConsumer evicted) {
    if (lru.remove(hash)) {
      lru.add(hash);
      return false;
    }
    if (lru.size() >= capacity) {
      Iterator<Long> head = lru.iterator();
      long victim = head.next();
      head.remove();
      evicted.accept(victim);
    }
    lru.add(hash);
    return true;
  }

  void clear() {
    lru.clear();
  }

  Set<Long> hashes() {
    return new TreeSet<>(lru);
  }
}
