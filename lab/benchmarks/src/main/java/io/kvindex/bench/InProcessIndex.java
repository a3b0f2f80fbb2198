package io.kvindex.bench;

import io.kvindex.common.Check;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * An index held in the router's own JVM: what each gateway has when the index is not shared. A
 * primitive open-addressing table (linear probing) from block key to the small array of pods that
 * hold it, no boxing; a read-write lock makes each lookup see one state and each batch and clear
 * apply whole. The floor a shared index pays its network round trip against, not a target.
 * Thread-safe.
 */
final class InProcessIndex implements ComparedIndex {
  private static final int MAX_PODS = Short.MAX_VALUE;
  private static final double LOAD = 0.6;

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Map<String, Integer> podIds = new HashMap<>();
  private final List<String> pods = new ArrayList<>();
  private long[] keys;
  private short[][] holders;
  private int size;

  InProcessIndex(int initialCapacity) {
    int capacity =
        Integer.highestOneBit(Math.max(16, Check.atLeast(initialCapacity, 1, "cap")) * 2);
    keys = new long[capacity];
    holders = new short[capacity][];
  }

  @Override
  public String name() {
    return "in_process";
  }

  @Override
  public long store(List<ApplyPump.Feed> feeds) {
    long blocks = 0;
    for (ApplyPump.Feed feed : feeds) {
      while (feed.batches().hasNext()) {
        blocks += apply(feed.stream().pod(), feed.batches().next());
      }
    }
    return blocks;
  }

  /** Applies one batch's stores under the write lock; returns the blocks stored. */
  int apply(String pod, KvEventBatch batch) {
    lock.writeLock().lock();
    try {
      short id = podId(pod);
      int blocks = 0;
      for (KvEvent event : batch.events()) {
        if (event instanceof BlockStored stored) {
          for (long hash : stored.blockHashes()) {
            add(hash, id);
            blocks++;
          }
        }
      }
      return blocks;
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public int[] depths(long[] prompt, List<String> candidates) {
    int[] depths = new int[candidates.size()];
    lock.readLock().lock();
    try {
      int[] candidateOf = new int[pods.size()];
      Arrays.fill(candidateOf, -1);
      for (int c = 0; c < candidates.size(); c++) {
        Integer id = podIds.get(candidates.get(c));
        if (id != null && candidateOf[id] < 0) {
          candidateOf[id] = c;
        }
      }
      for (int i = 0; i < prompt.length; i++) {
        int slot = find(prompt[i]);
        if (slot < 0 || !extend(holders[slot], candidateOf, depths, i)) {
          break;
        }
      }
    } finally {
      lock.readLock().unlock();
    }
    return depths;
  }

  /** Extends the depth of every candidate still matching that holds block {@code i}. */
  private static boolean extend(short[] holding, int[] candidateOf, int[] depths, int i) {
    boolean extended = false;
    for (short pod : holding) {
      int c = candidateOf[pod];
      if (c >= 0 && depths[c] == i) {
        depths[c] = i + 1;
        extended = true;
      }
    }
    return extended;
  }

  @Override
  public void clear(String pod, Runnable step) {
    lock.writeLock().lock();
    try {
      Integer id = podIds.get(pod);
      if (id == null) {
        return;
      }
      long[] oldKeys = keys;
      short[][] oldHolders = holders;
      keys = new long[oldKeys.length];
      holders = new short[oldKeys.length][];
      size = 0;
      for (int s = 0; s < oldKeys.length; s++) {
        short[] held = oldHolders[s] == null ? null : without(oldHolders[s], id.shortValue());
        if (held != null && held.length > 0) {
          insert(oldKeys[s], held);
        }
      }
    } finally {
      lock.writeLock().unlock();
    }
    step.run();
  }

  /** How many distinct blocks the table holds. */
  int blocks() {
    lock.readLock().lock();
    try {
      return size;
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * The table's bytes as the JVM lays out arrays with compressed references (16-byte array header,
   * 4-byte references, 8-byte alignment): the key array, the reference array and every pod array.
   * The pod-name map is left out (it is per pod, not per entry).
   */
  long accountedBytes() {
    lock.readLock().lock();
    try {
      long bytes = arrayBytes(keys.length, 8) + arrayBytes(holders.length, 4);
      for (short[] held : holders) {
        if (held != null) {
          bytes += arrayBytes(held.length, 2);
        }
      }
      return bytes;
    } finally {
      lock.readLock().unlock();
    }
  }

  private static long arrayBytes(long length, int elementBytes) {
    return (16 + length * elementBytes + 7) / 8 * 8;
  }

  private short podId(String pod) {
    Integer id = podIds.get(pod);
    if (id == null) {
      if (pods.size() >= MAX_PODS) {
        throw new IllegalStateException("more than " + MAX_PODS + " pods");
      }
      id = pods.size();
      pods.add(pod);
      podIds.put(pod, id);
    }
    return id.shortValue();
  }

  private void add(long key, short pod) {
    int slot = find(key);
    if (slot >= 0) {
      short[] held = holders[slot];
      for (short p : held) {
        if (p == pod) {
          return;
        }
      }
      short[] grown = Arrays.copyOf(held, held.length + 1);
      grown[held.length] = pod;
      holders[slot] = grown;
      return;
    }
    if (size + 1 > keys.length * LOAD) {
      grow();
    }
    insert(key, new short[] {pod});
  }

  private void insert(long key, short[] held) {
    int mask = keys.length - 1;
    int slot = spread(key) & mask;
    while (holders[slot] != null) {
      slot = (slot + 1) & mask;
    }
    keys[slot] = key;
    holders[slot] = held;
    size++;
  }

  private int find(long key) {
    int mask = keys.length - 1;
    int slot = spread(key) & mask;
    while (holders[slot] != null) {
      if (keys[slot] == key) {
        return slot;
      }
      slot = (slot + 1) & mask;
    }
    return -1;
  }

  private void grow() {
    long[] oldKeys = keys;
    short[][] oldHolders = holders;
    keys = new long[oldKeys.length * 2];
    holders = new short[oldKeys.length * 2][];
    size = 0;
    for (int s = 0; s < oldKeys.length; s++) {
      if (oldHolders[s] != null) {
        insert(oldKeys[s], oldHolders[s]);
      }
    }
  }

  private static short[] without(short[] held, short pod) {
    for (int i = 0; i < held.length; i++) {
      if (held[i] == pod) {
        short[] less = new short[held.length - 1];
        System.arraycopy(held, 0, less, 0, i);
        System.arraycopy(held, i + 1, less, i, held.length - i - 1);
        return less;
      }
    }
    return held;
  }

  private static int spread(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  @Override
  public String describe() {
    return "a primitive open-addressing table (long block key -> short[] pods, linear probing, load"
        + " "
        + LOAD
        + ") in the benchmark's JVM behind a read-write lock: each batch under the write lock,"
        + " each lookup under the read lock (walking the prompt until no candidate still matches),"
        + " a clear rebuilds the table without the pod under the write lock (lookups wait for it)";
  }

  @Override
  public void close() {
    lock.writeLock().lock();
    try {
      keys = new long[16];
      holders = new short[16][];
      size = 0;
    } finally {
      lock.writeLock().unlock();
    }
  }
}
