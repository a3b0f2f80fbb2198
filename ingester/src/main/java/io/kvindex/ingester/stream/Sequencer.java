package io.kvindex.ingester.stream;

import io.kvindex.index.ApplyResult;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.ingester.stream.Action.Apply;
import io.kvindex.ingester.stream.Action.Idle;
import io.kvindex.ingester.stream.Action.Publish;
import io.kvindex.ingester.stream.Action.RepairGap;
import io.kvindex.ingester.stream.Action.RunPurge;
import java.util.List;

/**
 * The ordering rules of one stream, with no I/O and no clock: which batch is applied next, which
 * live batch is a duplicate or an engine restart, when a gap needs a replay, and which purge must
 * run before anything else. The {@link StreamWorker} feeds it what arrives and what Redis answered,
 * and carries out the {@link Action} it asks for. It is the worker's one handle on the stream's
 * order, so it also passes on what its parts say: where the stream stands in the index ({@link
 * StreamPosition}), what to make of a replay's answer ({@link ReplayAnswers}), and the batches held
 * with their bytes ({@link Pending}). Not thread-safe: one worker thread drives it.
 *
 * <p>Implementation notes. Batches are applied strictly in sequence order: live batches wait in
 * {@link Pending} (ordered by sequence, each counted in the process's {@link MemoryBudget}) until
 * every earlier one is applied. A batch is in exactly one place: pending, or applied (its sequence
 * is then below {@code expected}, the index's watermark + 1). A gap (the lowest pending sequence is
 * above {@code expected}) is repaired by a replay from {@code expected}; when the replay cannot
 * cover the gap the stream is purged and goes on from the oldest batch available (a stream that
 * never applied anything just starts there). A live sequence below {@code expected} that is not a
 * recent duplicate ({@link RecentlyApplied}) means the engine restarted: purge, forget the
 * watermark, start over from sequence 0. A batch carrying AllBlocksCleared is applied by Redis as a
 * purge followed by the events after the clear, so until it applies the stream does not advance: a
 * temporary error keeps the purge pending instead of leaving a cleared pod looking warm. DUPLICATE
 * and GAP answers carry the index's watermark, which is the truth. A stream behind its engine
 * applies consecutive waiting batches as one call ({@link ApplyMerger}).
 *
 * <p>A live batch that cannot be read is asked for again from the replay ring (the live copy may be
 * damaged where the ring's is not); if that copy cannot be read either, or there is none, what the
 * batch changed is lost: the stream is purged and goes on after it, as after a gap the replay
 * cannot cover. A batch the index refuses as one it can never apply is {@link #rejected} the same
 * way.
 *
 * <p>A live stream only moves forward: a live sequence below the watermark but past the last live
 * one is a late copy of a batch a replay already applied (a replay can overtake hundreds of queued
 * live batches), not a restart. Sleep is level-triggered ({@link EngineSleep}): falling asleep
 * purges the stream. A stream with no watermark of its own is rebuilt from what its engine can
 * replay, staged until published: the state machine {@link Rebuild}.
 */
public final class Sequencer {
  private final Pending pending;
  private final ApplyMerger merger;
  private final RecentlyApplied recent = new RecentlyApplied();
  private final EngineSleep sleep = new EngineSleep();
  private final StreamPosition at = new StreamPosition();
  private final ReplayAnswers replays;
  private long lastLive = -1;
  private int restarts;
  private long refetched = -1;

  /**
   * @param maxPending batches buffered at most while waiting (live, or brought by a replay)
   * @param maxPendingBytes bytes of waiting live batches at most ({@link Batch#bytes()})
   * @param mode how the stream's model keys its blocks (what a batch counts against a chunk)
   * @param mergeBlocks consecutive waiting batches are applied as one while their blocks fit this
   *     many ({@link io.kvindex.index.PrefixIndex#applyChunkBlocks}); 0: one batch per apply
   * @param budget the process's memory budget, which counts every batch held
   */
  public Sequencer(
      int maxPending, long maxPendingBytes, KeyMode mode, int mergeBlocks, MemoryBudget budget) {
    this.pending = new Pending(maxPending, maxPendingBytes, budget);
    this.merger = new ApplyMerger(mode, mergeBlocks);
    this.replays = new ReplayAnswers(at, pending, recent);
  }

  /** Bytes of the batches waiting, live and replayed ({@link Batch#bytes()}). */
  public long pendingBytes() {
    return pending.bytes();
  }

  /** Bytes of the replayed batches waiting: history a replay window brought, not applied yet. */
  public long replayedBytes() {
    return pending.bytes() - pending.liveBytes();
  }

  /**
   * Lets go of the replayed history waiting (live batches stay): past a gap it cannot be applied
   * before the gap is repaired, and its bytes leave the replay window no room for the gap. Read
   * again after the gap (what is not held is replayed later, as a gap). Returns whether any was
   * held.
   */
  public boolean dropHistory() {
    return pending.releaseReplayed();
  }

  /** The stream stops: every batch held is let go, its bytes given back to the budget. */
  public void release() {
    pending.releaseAll();
  }

  /**
   * The next sequence to apply: a batch below it is applied already (a replay's copy of one is only
   * compared with it), or -1 before the watermark is read.
   */
  public long expected() {
    return at.expected();
  }

  /** Whether the stream's watermark has been read from the index. */
  public boolean started() {
    return at.started();
  }

  /**
   * Starts the stream after the index's watermark ({@code -1} when it has none); {@code staged}: a
   * former owner was rebuilding it (its entries are not yet shown), so this owner goes on
   * rebuilding and publishes.
   */
  public void start(long watermark, boolean staged) {
    at.start(watermark, staged);
  }

  /** The last applied sequence, or -1. */
  public long applied() {
    return at.applied();
  }

  /** Engine restarts seen so far. */
  public int restarts() {
    return restarts;
  }

  /** Whether a purge is due before anything else is applied. */
  public boolean purgePending() {
    return at.purge() != null;
  }

  /** The batch waiting with the lowest sequence, or null when none waits. */
  public Batch oldestPending() {
    return pending.first();
  }

  /** A live batch arrived. */
  public Live live(Batch batch) {
    long seq = batch.seq();
    if (seq < at.expected()) {
      boolean resent = recent.resent(batch);
      boolean late = lastLive >= 0 && seq > lastLive;
      if (resent || late) {
        lastLive = Math.max(lastLive, seq);
        return Live.DUPLICATE;
      }
      restart();
      lastLive = seq;
      pending.hold(MemoryBudget.Use.LIVE, batch); // the new engine's first batch: kept
      return Live.RESTART;
    }
    lastLive = Math.max(lastLive, seq);
    if (pending.contains(seq)) {
      return Live.DUPLICATE; // a second copy of a batch still waiting
    }
    return pending.admitLive(batch);
  }

  /**
   * The engine's sleep state, as its {@code /metrics} said at the last scrape. Falling asleep
   * purges the stream; while asleep, nothing from before the sleep adds a block.
   */
  public void asleep(boolean nowAsleep) {
    long newest = Math.max(at.expected() - 1, lastLive);
    if (sleep.report(nowAsleep, Math.max(newest, pending.isEmpty() ? -1 : pending.lastSeq()))) {
      requestPurge("sleep");
    }
  }

  /**
   * The engine restarted (a new incarnation, or a sequence below the watermark): whatever is
   * pending belonged to the old engine; purge, forget the watermark, go on from sequence 0.
   */
  public void restart() {
    restarts++;
    pending.releaseAll();
    recent.clear();
    lastLive = -1; // the old process's sequences say nothing about the new one's
    at.startOver("engine_restart");
  }

  /**
   * The index lost what it held of this stream, or may have (Redis restarted empty, a failover lost
   * acknowledged writes, a FLUSHDB): start again as a new stream would, from what the engine can
   * replay. Whatever the index still holds is purged first (an older state would say the pod holds
   * blocks it has since removed); the batches waiting are the engine's and stay.
   */
  public void indexLost() {
    recent.clear();
    at.startOver("index_reset");
  }

  /**
   * A router found the index listing blocks the engine no longer holds (its drift resync request):
   * purge the stream, forget the watermark and apply again what the replay ring still covers, from
   * its oldest batch. The batches waiting stay. A pending purge that starts over from 0 already
   * does all of that and is kept; any other is replaced.
   */
  public void resync() {
    if (at.startOverUnlessDue("drift")) {
      recent.clear();
    }
  }

  /** Asks for a purge (a level-triggered caller may ask again; one pending purge is enough). */
  public void requestPurge(String reason) {
    at.requestPurge(reason);
  }

  /** The next thing to do. */
  public Action next() {
    if (at.purge() != null) {
      return new RunPurge(at.purge());
    }
    while (!pending.isEmpty()) {
      Batch batch = pending.first();
      long first = batch.seq();
      long expected = at.expected();
      if (first < expected) {
        pending.release(first); // applied meanwhile (a replay, or a lost reply)
      } else if (first > expected) {
        return new RepairGap(expected, first, false);
      } else {
        Batch toApply = sleep.asApplied(batch);
        if (toApply == batch && batch.malformed() != null) {
          if (batch.live() && refetched != first) {
            refetched = first;
            return new RepairGap(first, first + 1, true);
          }
          // Neither the live copy nor the ring's could be read: what it changed is lost.
          pending.release(first);
          at.goOnFrom(first + 1, "malformed_batch");
          return next();
        }
        return merger.apply(toApply, pending.after(first), sleep::asApplied, at.staging());
      }
    }
    // Shown only once past every live batch seen (applied, or gone past on purpose): one dropped
    // for want of room is still missing (the next live batch's gap, or a quiet stream's catch-up,
    // brings it).
    if (at.mayPublish() && at.expected() > lastLive) {
      return new Publish();
    }
    return new Idle();
  }

  /**
   * Applies consecutive waiting batches as one only while their blocks fit {@code blocks}, less
   * than a call's chunk, so that each call has room for what else it carries (an eviction model's
   * changes).
   */
  public void mergeWithin(int blocks) {
    merger.within(blocks);
  }

  /** What the publish asked for by {@link Publish} did; true when it is done. */
  public boolean published(PurgeStatus status) {
    return at.published(status);
  }

  /** Whether a quiet stream may ask its replay socket for batches after its watermark. */
  public boolean mayCatchUp() {
    return replays.mayCatchUp();
  }

  /** The sequence a catch-up asks for ({@link ReplayAnswers#catchUpFrom}). */
  public long catchUpFrom() {
    return replays.catchUpFrom();
  }

  /** The sequence the replay for {@code gap} asks from ({@link ReplayAnswers#replayFrom}). */
  public long replayFrom(RepairGap gap) {
    return replays.replayFrom(gap);
  }

  /**
   * Whether the replayed batches come from the engine whose batches were applied ({@link
   * RecentlyApplied#sameEngine}); if not, {@link #restart}.
   */
  public boolean sameEngine(List<Batch> replayed) {
    return replays.sameEngine(replayed);
  }

  /** Whether the replayed batches held something to compare ({@link RecentlyApplied#compared}). */
  public boolean compared(List<Batch> replayed) {
    return replays.compared(replayed);
  }

  /** The replayed batches not yet applied (a catch-up or replay starts one early). */
  public List<Batch> notApplied(List<Batch> replayed) {
    return replays.notApplied(replayed);
  }

  /** Batches a catch-up returned, held to be applied in order ({@link ReplayAnswers#caughtUp}). */
  public void caughtUp(List<Batch> batches) {
    replays.caughtUp(batches);
  }

  /**
   * The last replay stopped at its window, before the ring's end: more history is to be fetched, so
   * the rebuild is not published until a later catch-up or replay has reached the end.
   */
  public void historyCut() {
    at.historyCut();
  }

  /**
   * The index refused the batch the sequencer asked to apply as one it can never apply: the stream
   * goes on after it, purged first (what the index holds of it can no longer be trusted).
   */
  public void rejected(Batch batch) {
    pending.release(batch.seq());
    at.goOnFrom(batch.seq() + 1, "batch_rejected");
  }

  /**
   * {@link #rejected(Batch)} for what {@link Apply} asked for: when it was several batches, none is
   * given up yet; they are applied one at a time, so that only the one at fault is rejected.
   */
  public void rejected(Apply apply) {
    if (apply.parts().size() == 1) {
      rejected(apply.batch());
    } else {
      oneAtATime(apply);
    }
  }

  /**
   * The index would not apply what {@link Apply} asked for as one (its first batch is part applied:
   * an earlier call of it stopped between two chunks): the batches are applied one at a time.
   */
  public void oneAtATime(Apply apply) {
    merger.aloneThrough(apply.batch().seq());
  }

  /** What the purge asked for by {@link RunPurge} did; true when it is done. */
  public boolean purged(PurgeStatus status) {
    return at.purged(status);
  }

  /**
   * What the apply asked for by {@link Apply} did, one batch or several. APPLIED advances the
   * stream; DUPLICATE and GAP take the index's watermark (the batch then waits, or is dropped if
   * already applied); FENCED and SWALLOWED leave everything as it was.
   */
  public void applied(Apply apply, ApplyResult result) {
    switch (result.status()) {
      case APPLIED -> {
        for (Batch part : apply.parts()) {
          pending.release(part.seq());
          recent.add(part);
        }
        // Live batches too: the stream is shown once it has caught up with its engine, not while
        // the live backlog queued during the replay is still being applied.
        at.advanced(apply.batch().seq());
      }
      case DUPLICATE, GAP -> at.watermark(result.watermark());
      default -> {
        // FENCED stops the worker; SWALLOWED is tried again after a backoff
      }
    }
  }

  /** The pod has no replay endpoint ({@link ReplayAnswers#noReplay}). */
  public GapRepair noReplay(RepairGap gap) {
    return replays.noReplay(gap);
  }

  /** What a replay for {@code gap} returned ({@link ReplayAnswers#replayed}). */
  public GapRepair replayed(RepairGap gap, List<Batch> batches, boolean ended) {
    return replays.replayed(gap, batches, ended);
  }

  /** The ring's oldest batch is past the gap's start ({@link ReplayAnswers#beyondRing}). */
  public GapRepair beyondRing(RepairGap gap, long oldest) {
    return replays.beyondRing(gap, oldest);
  }

  /** The replay sent more than the stream may hold ({@link ReplayAnswers#replayTooLarge}). */
  public GapRepair replayTooLarge(RepairGap gap) {
    return replays.replayTooLarge(gap);
  }
}
