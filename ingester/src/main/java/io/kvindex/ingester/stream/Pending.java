package io.kvindex.ingester.stream;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;

/**
 * The batches one stream holds until they are applied, by sequence, within its bounds (a count, and
 * the bytes of live batches), each counted in the process's {@link MemoryBudget} for as long as it
 * is held: a live one only if the budget has room, replayed history always (its replay window
 * already made room for it). The {@link Sequencer} decides which batches it wants; this keeps them
 * and their bytes. Not thread-safe: one worker thread drives it.
 */
final class Pending {
  private final TreeMap<Long, Batch> batches = new TreeMap<>();
  private final int maxBatches;
  private final long maxLiveBytes;
  private final MemoryBudget budget;
  private long bytes;
  private long liveBytes;

  /**
   * @param maxBatches batches held at most (live, or brought by a replay)
   * @param maxLiveBytes bytes of live batches held at most ({@link Batch#bytes()})
   */
  Pending(int maxBatches, long maxLiveBytes, MemoryBudget budget) {
    this.maxBatches = maxBatches;
    this.maxLiveBytes = maxLiveBytes;
    this.budget = budget;
  }

  /** Holds a new live batch if it fits the bounds and the budget; says what became of it. */
  Live admitLive(Batch batch) {
    if (batches.size() >= maxBatches || liveBytes + batch.bytes() > maxLiveBytes) {
      return Live.DROPPED;
    }
    if (!budget.tryTake(MemoryBudget.Use.LIVE, batch.bytes())) {
      return Live.OVER_BUDGET;
    }
    put(batch);
    return Live.QUEUED;
  }

  /**
   * Holds a batch a replay brought, in place of the one held at its sequence if any. When full, the
   * newest batch held makes room for an older one (it is replayed later, as a gap), and one newer
   * than all of them is not held (it is left to the next replay).
   */
  void holdReplayed(Batch batch) {
    boolean replaces = batches.containsKey(batch.seq());
    if (!replaces && batches.size() >= maxBatches && batches.lastKey() > batch.seq()) {
      release(batches.lastKey()); // the newest waits again, as a gap: what comes next goes first
    }
    if (replaces || batches.size() < maxBatches) {
      hold(use(batch), batch);
    }
  }

  /** Holds a batch, its bytes taken from the budget as {@code use} whether or not it has room. */
  void hold(MemoryBudget.Use use, Batch batch) {
    budget.take(use, batch.bytes());
    put(batch);
  }

  /** Holds a batch whose bytes the budget has counted already. */
  private void put(Batch batch) {
    Batch before = batches.put(batch.seq(), batch);
    if (before != null) {
      forget(before);
    }
    bytes += batch.bytes();
    if (batch.live()) {
      liveBytes += batch.bytes();
    }
  }

  private void forget(Batch gone) {
    bytes -= gone.bytes();
    if (gone.live()) {
      liveBytes -= gone.bytes();
    }
    budget.give(use(gone), gone.bytes());
  }

  /** How the budget counts a batch's bytes. */
  static MemoryBudget.Use use(Batch batch) {
    return batch.live() ? MemoryBudget.Use.LIVE : MemoryBudget.Use.REPLAY;
  }

  /** Lets go of the batch at {@code seq}, if held. */
  void release(long seq) {
    Batch gone = batches.remove(seq);
    if (gone != null) {
      forget(gone);
    }
  }

  /** Lets go of every batch held. */
  void releaseAll() {
    batches.values().forEach(this::forget);
    batches.clear();
  }

  /** Lets go of the replayed batches held (live ones stay); returns whether any was held. */
  boolean releaseReplayed() {
    List<Long> replayed = new ArrayList<>();
    batches.forEach(
        (seq, b) -> {
          if (!b.live()) {
            replayed.add(seq);
          }
        });
    replayed.forEach(this::release);
    return !replayed.isEmpty();
  }

  /** Bytes of the batches held, live and replayed ({@link Batch#bytes()}). */
  long bytes() {
    return bytes;
  }

  /** Bytes of the live batches held. */
  long liveBytes() {
    return liveBytes;
  }

  boolean isEmpty() {
    return batches.isEmpty();
  }

  boolean contains(long seq) {
    return batches.containsKey(seq);
  }

  /** The batch held at {@code seq}, or null. */
  Batch get(long seq) {
    return batches.get(seq);
  }

  /** The batch held with the lowest sequence, or null when none is. */
  Batch first() {
    var first = batches.firstEntry();
    return first == null ? null : first.getValue();
  }

  /** The highest sequence held; only when some batch is. */
  long lastSeq() {
    return batches.lastKey();
  }

  /** The batches held after {@code seq}, in order. */
  Collection<Batch> after(long seq) {
    return batches.tailMap(seq, false).values();
  }
}
