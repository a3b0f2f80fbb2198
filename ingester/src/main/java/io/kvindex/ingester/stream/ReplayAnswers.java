package io.kvindex.ingester.stream;

import io.kvindex.ingester.stream.Action.RepairGap;
import java.util.List;

/**
 * What one stream asks of its engine's replay ring and makes of the answers, for its {@link
 * Sequencer}: when a quiet stream may catch up and where a catch-up or a gap's replay starts,
 * whether the ring's copies come from the engine whose batches were applied, which batches it
 * brought are held to be applied, and what became of the gap ({@link GapRepair}): covered, or lost,
 * the stream then going on past it. It shares the stream's {@link StreamPosition}, {@link Pending}
 * batches and {@link RecentlyApplied} with the Sequencer. Not thread-safe: one worker thread drives
 * it.
 */
final class ReplayAnswers {
  private final StreamPosition at;
  private final Pending pending;
  private final RecentlyApplied recent;

  ReplayAnswers(StreamPosition at, Pending pending, RecentlyApplied recent) {
    this.at = at;
    this.pending = pending;
    this.recent = recent;
  }

  /** Whether a quiet stream may ask its replay socket for batches after its watermark. */
  boolean mayCatchUp() {
    return at.purge() == null && pending.isEmpty() && at.started();
  }

  /**
   * The sequence a catch-up asks for: everything after the watermark, and the last applied batch
   * too when it is remembered ({@link RecentlyApplied#checkableFrom}).
   */
  long catchUpFrom() {
    return recent.checkableFrom(at.expected(), at.expected());
  }

  /** The sequence the replay for {@code gap} asks from (one early, as for a catch-up). */
  long replayFrom(RepairGap gap) {
    return gap.malformed() ? gap.from() : recent.checkableFrom(gap.from(), at.expected());
  }

  /**
   * Whether the replayed batches come from the engine whose batches were applied ({@link
   * RecentlyApplied#sameEngine}).
   */
  boolean sameEngine(List<Batch> replayed) {
    return recent.sameEngine(replayed, at.expected());
  }

  /** Whether the replayed batches held something to compare ({@link RecentlyApplied#compared}). */
  boolean compared(List<Batch> replayed) {
    return recent.compared(replayed, at.expected());
  }

  /** The replayed batches not yet applied (a catch-up or replay starts one early). */
  List<Batch> notApplied(List<Batch> replayed) {
    return replayed.stream().filter(b -> b.seq() >= at.expected()).toList();
  }

  /**
   * Batches a catch-up returned; they are applied in order like live ones. A ring's readable copy
   * replaces a live one that could not be read. At most as many batches are held as live ones may
   * wait: when full, the newest batch waiting makes room for an older one (it is replayed later, as
   * a gap), and what is newer than all of them is left to the next replay.
   */
  void caughtUp(List<Batch> batches) {
    at.caughtUp();
    for (Batch b : batches) {
      Batch held = pending.get(b.seq());
      if (b.seq() >= at.expected()
          && (held == null || held.malformed() != null && b.malformed() == null)) {
        pending.holdReplayed(b);
      }
    }
  }

  /**
   * The pod has no replay endpoint: what the gap lost cannot be recovered, so the stream is purged
   * (unless it never applied anything) and goes on from the first live batch.
   */
  GapRepair noReplay(RepairGap gap) {
    lost(gap, "gap_no_replay");
    return GapRepair.ABSENT;
  }

  /**
   * What a replay from {@code gap.from()} returned.
   *
   * @param ended whether the end marker arrived
   */
  GapRepair replayed(RepairGap gap, List<Batch> batches, boolean ended) {
    if (batches.isEmpty()) {
      lost(gap, "gap_replay_failed");
      return ended ? GapRepair.EMPTY : GapRepair.SILENT;
    }
    caughtUp(batches);
    long first = pending.first().seq();
    if (first > at.expected()) {
      at.goOnFrom(first, "gap_beyond_ring");
      return GapRepair.BEYOND_RING;
    }
    return ended ? GapRepair.COVERED : GapRepair.PARTIAL;
  }

  /**
   * A replay for {@code gap} had no room for a batch, but the ring's oldest batch, {@code oldest},
   * is past the gap's start: no replay can cover it, so the stream goes on from there.
   */
  GapRepair beyondRing(RepairGap gap, long oldest) {
    at.goOnFrom(Math.min(oldest, gap.firstLive()), "gap_beyond_ring");
    return GapRepair.BEYOND_RING;
  }

  /** The replay sent more than the stream may hold: what it covered is lost. */
  GapRepair replayTooLarge(RepairGap gap) {
    lost(gap, "replay_too_large");
    return GapRepair.TOO_LARGE;
  }

  /** What {@code gap} covers is lost: the stream goes on from its first live batch. */
  private void lost(RepairGap gap, String reason) {
    at.goOnFrom(gap.firstLive(), gap.malformed() ? "malformed_batch" : reason);
  }
}
