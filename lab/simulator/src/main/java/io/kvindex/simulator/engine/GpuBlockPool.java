package io.kvindex.simulator.engine;

import java.util.Arrays;
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
 *
 * <p>A hybrid model's cache groups share the pool, as vLLM's do: a slot caches one hash of one
 * group, and the same hash may be cached once per group (vLLM keys its cache by hash and group id).
 *
 * <p>Both structures are arrays allocated once: the free queue a doubly linked list through the
 * slots, the map open addressing with linear probing. A pool at work allocates nothing, where a
 * boxed slot in a linked set and a boxed hash in a map per block lived seconds, long enough for
 * young collections to copy them again and again in the JVM the demo's routers share.
 */
final class GpuBlockPool {
  private static final int NONE = -1;

  private final int capacity;
  private final long[] slotHash;
  private final int[] slotGroup;
  private final boolean[] slotHasHash;

  // The free queue: slots linked from head (evicted first) to tail.
  private final int[] prev;
  private final int[] next;
  private final boolean[] queued;
  // Requests using each slot: a prefix hit shares a slot another running request holds.
  private final int[] refs;
  private int head = NONE;
  // What the last takeHead evicted, if anything (kept in fields: an allocation allocates nothing).
  private boolean tookHash;
  private long tookHashValue;
  private int tookHashGroup;
  private int tail = NONE;
  private int freeCount;

  // Hash to slot: keys and slot + 1 (0: an empty cell), a power of two cells, at most half full.
  private final long[] keys;
  private final int[] values;
  private final int mask;

  GpuBlockPool(int capacity) {
    this.capacity = capacity;
    this.slotHash = new long[capacity];
    this.slotGroup = new int[capacity];
    this.slotHasHash = new boolean[capacity];
    this.prev = new int[capacity];
    this.next = new int[capacity];
    this.queued = new boolean[capacity];
    this.refs = new int[capacity];
    for (int slot = 0; slot < capacity; slot++) {
      enqueue(slot);
    }
    int cells = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1) * 2;
    this.keys = new long[cells];
    this.values = new int[cells];
    this.mask = cells - 1;
  }

  int capacity() {
    return capacity;
  }

  /** Sees an evicted block: its hash and its cache group. */
  @FunctionalInterface
  interface Evicted {
    void evicted(long hash, int group);
  }

  /** The slot caching {@code hash} (of cache group 0), or {@code -1}. */
  int lookup(long hash) {
    return lookup(hash, 0);
  }

  /** The slot caching {@code hash} of cache group {@code group}, or {@code -1}. */
  int lookup(long hash, int group) {
    int cell = find(hash, group);
    return cell < 0 ? -1 : values[cell] - 1;
  }

  /** Slots in the free queue: what new allocations can take (cached or not). */
  int freeCount() {
    return freeCount;
  }

  /** Whether the slot is in the free queue (not in use by a request). */
  boolean isFree(int slot) {
    return queued[slot];
  }

  boolean contains(long hash) {
    return find(hash, 0) >= 0;
  }

  boolean contains(long hash, int group) {
    return find(hash, group) >= 0;
  }

  /**
   * Takes a cached slot into use (a prefix hit): it leaves the free queue, and counts one more user
   * (requests running at once may share it, as vLLM's ref counts let them).
   */
  void touch(int slot) {
    if (queued[slot]) {
      unlink(slot);
    }
    refs[slot]++;
  }

  /**
   * Takes the head of the free queue for a new block. If it still caches a hash, that hash is
   * evicted and handed to {@code evicted}.
   */
  int allocate(LongConsumer evicted) {
    int slot = takeHead();
    if (tookHash) {
      evicted.accept(tookHashValue);
    }
    return slot;
  }

  /**
   * Takes the head of the free queue for a new block of any cache group. If it still caches a hash,
   * that hash (and its group) is evicted and handed to {@code evicted}.
   */
  int allocateForGroups(Evicted evicted) {
    int slot = takeHead();
    if (tookHash) {
      evicted.evicted(tookHashValue, tookHashGroup);
    }
    return slot;
  }

  /** Takes the free queue's head into use, evicting its hash into the {@code took*} fields. */
  private int takeHead() {
    if (head == NONE) {
      throw new IllegalStateException("no free GPU block; the request should have been rejected");
    }
    int slot = head;
    unlink(slot);
    refs[slot] = 1;
    tookHash = slotHasHash[slot];
    if (tookHash) {
      tookHashValue = slotHash[slot];
      tookHashGroup = slotGroup[slot];
      remove(tookHashValue, tookHashGroup);
      slotHasHash[slot] = false;
      slotHash[slot] = 0;
      slotGroup[slot] = 0;
    }
    return slot;
  }

  /**
   * Marks an in-use slot that caches no hash yet (as {@link #allocate} hands it out) as caching
   * {@code hash}. Returns false (and caches nothing) when another slot already caches that hash, so
   * each hash has at most one holder.
   */
  boolean cache(int slot, long hash) {
    return cache(slot, hash, 0);
  }

  /** As {@link #cache(int, long)}, for a block of cache group {@code group}. */
  boolean cache(int slot, long hash, int group) {
    if (slotHasHash[slot]) {
      throw new IllegalStateException("slot " + slot + " caches a hash already");
    }
    int cell = cellOf(hash, group);
    while (values[cell] != 0) {
      if (keys[cell] == hash && slotGroup[values[cell] - 1] == group) {
        return false;
      }
      cell = (cell + 1) & mask;
    }
    keys[cell] = hash;
    values[cell] = slot + 1;
    slotHash[slot] = hash;
    slotGroup[slot] = group;
    slotHasHash[slot] = true;
    return true;
  }

  /**
   * Returns a finished request's slot: once no request uses it, to the tail of the free queue, in
   * the order given (a slot already queued keeps its place).
   */
  void free(int slot) {
    if (refs[slot] > 0) {
      refs[slot]--;
    }
    if (refs[slot] == 0 && !queued[slot]) {
      enqueue(slot);
    }
  }

  /**
   * Returns a slot as {@link #free} does, but one that caches no hash goes to the head of the free
   * queue (taken first: it holds nothing worth keeping), as vLLM's pool frees a hybrid group's
   * unhashed blocks.
   */
  void freeUnhashedFirst(int slot) {
    if (slotHasHash[slot]) {
      free(slot);
      return;
    }
    if (refs[slot] > 0) {
      refs[slot]--;
    }
    if (refs[slot] == 0 && !queued[slot]) {
      enqueueFront(slot);
    }
  }

  /** Forgets every cached hash (reset, sleep); slots keep their place in the free queue. */
  void clearHashes() {
    Arrays.fill(values, 0);
    Arrays.fill(slotHasHash, false);
    Arrays.fill(slotHash, 0);
    Arrays.fill(slotGroup, 0);
  }

  /** A snapshot of the cached hashes of cache group 0. */
  Set<Long> hashes() {
    return hashes(0);
  }

  /** A snapshot of the cached hashes of cache group {@code group}. */
  Set<Long> hashes(int group) {
    Set<Long> out = new TreeSet<>();
    for (int cell = 0; cell < values.length; cell++) {
      if (values[cell] != 0 && slotGroup[values[cell] - 1] == group) {
        out.add(keys[cell]);
      }
    }
    return out;
  }

  private void enqueue(int slot) {
    prev[slot] = tail;
    next[slot] = NONE;
    if (tail == NONE) {
      head = slot;
    } else {
      next[tail] = slot;
    }
    tail = slot;
    queued[slot] = true;
    freeCount++;
  }

  private void enqueueFront(int slot) {
    prev[slot] = NONE;
    next[slot] = head;
    if (head == NONE) {
      tail = slot;
    } else {
      prev[head] = slot;
    }
    head = slot;
    queued[slot] = true;
    freeCount++;
  }

  private void unlink(int slot) {
    int p = prev[slot];
    int n = next[slot];
    if (p == NONE) {
      head = n;
    } else {
      next[p] = n;
    }
    if (n == NONE) {
      tail = p;
    } else {
      prev[n] = p;
    }
    queued[slot] = false;
    freeCount--;
  }

  private int cellOf(long hash, int group) {
    long h = (hash + group * 0xC2B2AE3D27D4EB4FL) * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32)) & mask;
  }

  /** The cell holding {@code hash} of {@code group}, or -1. */
  private int find(long hash, int group) {
    int cell = cellOf(hash, group);
    while (values[cell] != 0) {
      if (keys[cell] == hash && slotGroup[values[cell] - 1] == group) {
        return cell;
      }
      cell = (cell + 1) & mask;
    }
    return -1;
  }

  /** Removes {@code hash}, shifting later cells of its probe run back so that none is lost. */
  private void remove(long hash, int group) {
    int gap = find(hash, group);
    if (gap < 0) {
      return;
    }
    int cell = (gap + 1) & mask;
    while (values[cell] != 0) {
      int home = cellOf(keys[cell], slotGroup[values[cell] - 1]);
      // The entry may move into the gap when its home is not in (gap, cell], cyclically.
      if (((cell - home) & mask) >= ((cell - gap) & mask)) {
        keys[gap] = keys[cell];
        values[gap] = values[cell];
        gap = cell;
      }
      cell = (cell + 1) & mask;
    }
    values[gap] = 0;
  }
}
