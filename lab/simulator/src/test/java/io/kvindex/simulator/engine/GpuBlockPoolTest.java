package io.kvindex.simulator.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class GpuBlockPoolTest {

  @Test
  void free_aSlotTwoRunningRequestsShareStaysInUseUntilBothAreDone() {
    GpuBlockPool pool = new GpuBlockPool(2);
    int shared = pool.allocate(h -> {});
    pool.cache(shared, 5L);
    pool.touch(shared); // a second request hits the first one's block while it runs
    assertThat(pool.freeCount()).isEqualTo(1);

    pool.free(shared); // the first request ends
    assertThat(pool.isFree(shared)).as("the second request still uses it").isFalse();
    assertThat(pool.freeCount()).isEqualTo(1);
    List<Long> evicted = new ArrayList<>();
    pool.allocate(evicted::add);
    assertThat(evicted).isEmpty();
    assertThat(pool.lookup(5L)).isEqualTo(shared);

    pool.free(shared); // the second one ends
    assertThat(pool.isFree(shared)).isTrue();
    assertThat(pool.freeCount()).isEqualTo(1);
  }

  @Test
  void allocate_takesTheFreeQueueHeadAndEvictsItsHash() {
    GpuBlockPool pool = new GpuBlockPool(3);
    List<Long> evicted = new ArrayList<>();
    int a = pool.allocate(evicted::add);
    int b = pool.allocate(evicted::add);
    assertThat(a).isZero();
    assertThat(b).isEqualTo(1);
    assertThat(pool.cache(a, 0L)).isTrue(); // 0 is a hash like any other
    assertThat(pool.cache(b, 0L)).as("a hash has one holder").isFalse();
    assertThat(pool.cache(b, 11L)).isTrue();
    pool.free(b);
    pool.free(a);
    assertThat(pool.lookup(0L)).isEqualTo(a);
    assertThat(pool.contains(11L)).isTrue();

    assertThat(pool.allocate(evicted::add)).isEqualTo(2); // never used: no eviction
    assertThat(evicted).isEmpty();
    assertThat(pool.allocate(evicted::add)).isEqualTo(b); // freed first, evicted first
    assertThat(evicted).containsExactly(11L);
    assertThat(pool.contains(11L)).isFalse();
    pool.touch(a); // a prefix hit takes it out of the queue
    assertThatThrownBy(() -> pool.allocate(evicted::add)).isInstanceOf(IllegalStateException.class);
    assertThat(pool.hashes()).containsExactly(0L);
  }

  /** The pool against the collections it was first written with, over random operations. */
  @Test
  void randomOperations_sameAsAReferenceOfJdkCollections() {
    SplittableRandom random = new SplittableRandom(42);
    int capacity = 64;
    GpuBlockPool pool = new GpuBlockPool(capacity);
    Reference ref = new Reference(capacity);
    List<Integer> inUse = new ArrayList<>();
    for (int step = 0; step < 200_000; step++) {
      int op = random.nextInt(10);
      if (op < 4 && ref.free.size() > 0) {
        List<Long> got = new ArrayList<>();
        List<Long> want = new ArrayList<>();
        int slot = pool.allocate(got::add);
        assertThat(slot).isEqualTo(ref.allocate(want::add));
        assertThat(got).isEqualTo(want);
        inUse.add(slot);
      } else if (op < 6 && !inUse.isEmpty()) {
        int slot = inUse.get(random.nextInt(inUse.size()));
        long hash = random.nextInt(200) - 100;
        if (ref.hasHash[slot]) {
          assertThatThrownBy(() -> pool.cache(slot, hash))
              .isInstanceOf(IllegalStateException.class);
        } else {
          assertThat(pool.cache(slot, hash)).isEqualTo(ref.cache(slot, hash));
        }
      } else if (op < 8 && !inUse.isEmpty()) {
        int slot = inUse.remove(random.nextInt(inUse.size()));
        pool.free(slot);
        ref.free.add(slot);
      } else if (op < 9) {
        long hash = random.nextInt(200) - 100;
        int slot = pool.lookup(hash);
        assertThat(slot).isEqualTo(ref.lookup(hash));
        assertThat(pool.contains(hash)).isEqualTo(slot >= 0);
        if (slot >= 0 && random.nextBoolean() && !inUse.contains(slot)) {
          pool.touch(slot);
          ref.free.remove(slot);
          inUse.add(slot);
        }
      } else if (random.nextInt(100) == 0) {
        pool.clearHashes();
        ref.cached.clear();
        Arrays.fill(ref.hasHash, false);
      }
      if (step % 1000 == 0) {
        assertThat(pool.hashes()).containsExactlyInAnyOrderElementsOf(ref.cached.keySet());
      }
    }
  }

  /**
   * A pool at work allocates nothing: what it kept per block (a boxed slot in a linked set, a boxed
   * hash in a map) lived seconds, through young collections that copied it each time, in the JVM
   * the demo's routers share.
   */
  @Test
  void steadyState_allocatesNothingPerBlock() {
    GpuBlockPool pool = new GpuBlockPool(32_768);
    long[] next = {1};
    int[] slots = new int[1024];
    Runnable request =
        () -> {
          for (int i = 0; i < slots.length; i++) {
            slots[i] = pool.allocate(h -> {});
            pool.cache(slots[i], next[0]++ * 0x9E3779B97F4A7C15L);
          }
          for (int i = slots.length - 1; i >= 0; i--) {
            pool.free(slots[i]);
          }
        };
    for (int r = 0; r < 200; r++) {
      request.run(); // fills the pool and warms it up
    }
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long before = threads.getCurrentThreadAllocatedBytes();
    for (int r = 0; r < 100; r++) {
      request.run();
    }
    long allocated = threads.getCurrentThreadAllocatedBytes() - before;
    assertThat(allocated).as("bytes allocated for 102 400 blocks").isLessThan(64 * 1024);
  }

  /** The pool as first written, on JDK collections. */
  private static final class Reference {
    final LinkedHashSet<Integer> free = new LinkedHashSet<>();
    final Map<Long, Integer> cached = new HashMap<>();
    final long[] slotHash;
    final boolean[] hasHash;

    Reference(int capacity) {
      slotHash = new long[capacity];
      hasHash = new boolean[capacity];
      for (int s = 0; s < capacity; s++) {
        free.add(s);
      }
    }

    int allocate(java.util.function.LongConsumer evicted) {
      Iterator<Integer> head = free.iterator();
      int slot = head.next();
      head.remove();
      if (hasHash[slot]) {
        cached.remove(slotHash[slot]);
        hasHash[slot] = false;
        evicted.accept(slotHash[slot]);
      }
      return slot;
    }

    boolean cache(int slot, long hash) {
      if (cached.containsKey(hash)) {
        return false;
      }
      cached.put(hash, slot);
      slotHash[slot] = hash;
      hasHash[slot] = true;
      return true;
    }

    int lookup(long hash) {
      Integer slot = cached.get(hash);
      return slot == null ? -1 : slot;
    }
  }
}
