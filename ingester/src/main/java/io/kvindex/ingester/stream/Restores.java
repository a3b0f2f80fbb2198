package io.kvindex.ingester.stream;

import static io.kvindex.ingester.stream.BlockState.LISTED;
import static io.kvindex.ingester.stream.BlockState.PENDING;
import static io.kvindex.ingester.stream.BlockState.REMOVED_BY_MODEL;
import static io.kvindex.ingester.stream.BlockState.REMOVING;
import static io.kvindex.ingester.stream.BlockState.WAITING;

import io.kvindex.index.Touch;
import java.util.LinkedHashMap;
import java.util.Set;

/**
 * What an observed request lists again of the blocks an {@link EvictionModel} removed: the prompt's
 * chain from block 0 up to its cached depth, judged against when the engine last published each
 * block's removal (the latest {@code capacity} of those times are kept). Makes its transitions in
 * the model's {@link ModelBlocks}. Not thread-safe.
 */
final class Restores {
  private final ModelBlocks blocks;
  private final int capacity;

  /**
   * When the engine last published each block's removal (its batch's time, ms), the latest ones.
   */
  private final LinkedHashMap<Long, Long> publishedRemovalAt = new LinkedHashMap<>();

  private long restored;
  private long work;

  /** Restores in {@code blocks}, remembering the latest {@code capacity} published removals. */
  Restores(ModelBlocks blocks, int capacity) {
    this.blocks = blocks;
    this.capacity = capacity;
  }

  /** Blocks restored so far. */
  long restored() {
    return restored;
  }

  /** Blocks visited so far. */
  long work() {
    return work;
  }

  /** The touch's prompt blocks the engine reported cached. */
  static int cachedDepth(Touch t) {
    return Math.min(t.cachedBlocks(), t.blockKeys().length);
  }

  /** The engine published the block's removal in a batch of {@code atMillis}. */
  void published(Long b, long atMillis) {
    publishedRemovalAt.remove(b);
    publishedRemovalAt.put(b, atMillis);
    if (publishedRemovalAt.size() > capacity) {
      publishedRemovalAt.remove(publishedRemovalAt.keySet().iterator().next());
    }
  }

  /**
   * A prompt the engine just served, from its cache up to the touch's cached depth: what the model
   * removed of that chain is made listed again, parent first. Nothing else is: not a block whose
   * removal the engine published (unless the touch came after it and the model removed the block
   * since), not one the model never saw, not past the depth. The chain stops at the first block the
   * index does not list and the touch may not restore, since what follows would have no place.
   *
   * @param sentRemovals the removals of the call built and not settled
   */
  void restore(Touch t, Set<Long> sentRemovals) {
    long[] keys = t.blockKeys();
    int depth = cachedDepth(t);
    for (int i = 0; i < depth; i++) {
      work++;
      Long b = keys[i];
      Long parent = i == 0 ? null : keys[i - 1];
      BlockState s = blocks.get(b);
      if (s == LISTED || s == PENDING) {
        continue;
      }
      if (s == WAITING) {
        restored++; // stored by the engine, held back for its parent, which precedes it here
        blocks.pend(b, parent);
        continue;
      }
      if (!restorable(s, b, t.atMillis())) {
        if (s != null) {
          return;
        }
        continue; // never seen: older than the ring, taken as listed
      }
      if (s == REMOVING && !sentRemovals.contains(b)) {
        blocks.set(b, LISTED); // still in the index: its removal is not sent yet
        continue;
      }
      restored++; // a removal in a call that has not settled: stored again after it
      blocks.pend(b, parent);
    }
  }

  /**
   * Whether a touch recorded at {@code atMillis} may list the block again: the model removed it,
   * and the engine published no removal of it after the touch's request.
   */
  private boolean restorable(BlockState s, Long b, long atMillis) {
    boolean byModel = s == REMOVING || s == REMOVED_BY_MODEL;
    Long publishedAt = publishedRemovalAt.get(b);
    return byModel && (publishedAt == null || atMillis > publishedAt);
  }
}
