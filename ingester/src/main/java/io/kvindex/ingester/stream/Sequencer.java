package io.kvindex.ingester.stream;

import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.BatchCheck;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The ordering rules of one stream, with no I/O and no clock: which batch is applied next, which
 * live batch is a duplicate or an engine restart, when a gap needs a replay and what to do with the
 * replay's answer, and which purge must run before anything else. The {@link StreamWorker} feeds it
 * what arrives and what Redis answered, and carries out the {@link Action} it asks for. Not
 * thread-safe: one worker thread drives it.
 *
 * <p>Implementation notes. Batches are applied strictly in sequence order: live batches wait in
 * {@code pending} (ordered by sequence) until every earlier one is applied. A batch is in exactly
 * one place: pending, or applied (its sequence is then below {@code expected}, the index's
 * watermark + 1). A gap (the lowest pending sequence is above {@code expected}) is repaired by a
 * replay from {@code expected}; when the replay cannot cover the gap the stream is purged and goes
 * on from the oldest batch available (a stream that never applied anything just starts there). A
 * live sequence below {@code expected} that is not a recent duplicate means the engine restarted:
 * purge, forget the watermark, start over from sequence 0. A batch carrying AllBlocksCleared is
 * applied by Redis as a purge followed by the events after the clear, so until it applies the
 * stream does not advance: a temporary error keeps the purge pending instead of leaving a cleared
 * pod looking warm. DUPLICATE and GAP answers carry the index's watermark, which is the truth. A
 * stream behind its engine (a backlog after a Redis outage, a burst) applies consecutive waiting
 * batches as one call while their blocks fit one apply chunk: the index moves the watermark over
 * all of them at once, or over none.
 *
 * <p>A live batch that cannot be read is asked for again from the replay ring (the live copy may be
 * damaged where the ring's is not); if that copy cannot be read either, or there is none, what the
 * batch changed is lost: the stream is purged and goes on after it, as after a gap the replay
 * cannot cover. A batch the index refuses as one it can never apply is {@link #rejected} the same
 * way.
 *
 * <p>A live stream only moves forward: a live sequence below the watermark but past the last live
 * one is a late copy of a batch a replay already applied (a replay can overtake hundreds of queued
 * live batches), not a restart. Sleep is level-triggered: while the engine says it sleeps, the
 * index holds nothing of it whatever arrives; batches from before the sleep (buffered, replayed,
 * caught up) are applied without their events, so the watermark moves and no block the engine
 * dropped comes back. A live batch newer than everything seen before the sleep shows the engine
 * awake again.
 *
 * <p>A drift resync ({@link #resync}, asked by a router that found the pod over-predicted) is the
 * index-lost path by request: purge, forget the watermark, replay from the ring's oldest batch.
 *
 * <p>Memory. Every batch held is counted in the process's {@link MemoryBudget} for as long as it is
 * held: a live one only if it fits ({@link Live#OVER_BUDGET} otherwise: dropped, and replayed later
 * as a gap), replayed history always (its replay window already made room for it). What a replay or
 * a catch-up brings is held up to the count bound of live batches. A replay that stopped at its
 * window ({@link #historyCut}) leaves history to fetch: nothing is published before a later one has
 * come to the ring's end.
 */
public final class Sequencer {
  /** Live batches recognised as duplicates once applied: the most recent this many. */
  static final int RECENT = 256;

  /** Batches applied as one at most (their blocks are bounded by the apply call's chunk too). */
  static final int MAX_PARTS = 256;

  /** The next thing the stream must do. */
  public sealed interface Action permits Idle, RunPurge, Apply, RepairGap, Publish {}

  /** Nothing to do until something arrives. */
  public record Idle() implements Action {}

  /** Purge the stream before anything else; report with {@link #purged}. */
  public record RunPurge(Purge purge) implements Action {}

  /**
   * Apply this batch, the stream's next; report with {@link #applied}. {@code staged}: history
   * replayed while the stream is rebuilt, kept from lookups until {@link Publish}. When the stream
   * is behind, {@code batch} is several consecutive batches ({@code parts}, in order) as one: their
   * events in order, the last one's sequence, applied in one call.
   */
  public record Apply(Batch batch, boolean staged, List<Batch> parts) implements Action {
    public Apply {
      parts = List.copyOf(parts);
    }

    /** One batch alone. */
    public Apply(Batch batch, boolean staged) {
      this(batch, staged, List.of(batch));
    }

    /** The first batch's sequence ({@code batch.seq()} is the last's). */
    public long firstSeq() {
      return parts.get(0).seq();
    }
  }

  /**
   * The replayed history is applied: show it to lookups (the pod looked cold while it was rebuilt).
   * Report with {@link #published}.
   */
  public record Publish() implements Action {}

  /**
   * Ask the pod's replay socket for every batch from {@code from}: sequences up to {@code firstLive
   * - 1} are missing, or (when {@code malformed}) batch {@code from} arrived live but could not be
   * read, and the ring's copy may be intact. Report with {@link #replayed} (or {@link #noReplay}).
   */
  public record RepairGap(long from, long firstLive, boolean malformed) implements Action {}

  /**
   * A purge to run before anything else is applied.
   *
   * @param reason the metric tag ({@code sleep}, {@code engine_restart}, ...)
   * @param mode whether the index forgets the watermark
   * @param continueFrom the sequence to go on from once done, or -1 to keep the current one
   */
  public record Purge(String reason, PurgeMode mode, long continueFrom) {}

  /** What became of a live batch. */
  public enum Live {
    /** Waiting in order to be applied. */
    QUEUED,
    /** Already applied, or already waiting: the publisher sent it twice. */
    DUPLICATE,
    /** Below the watermark and new: the engine restarted; a purge now comes first. */
    RESTART,
    /** The pending buffer is full: dropped, and replayed later as a gap. */
    DROPPED,
    /** The process's memory budget for live batches is spent: dropped, replayed later as a gap. */
    OVER_BUDGET
  }

  /** What a replay did to a gap, as the replay metric tags it. */
  public enum GapRepair {
    /** The replay covered the gap and ended. */
    COVERED,
    /** The replay covered the gap but went silent before its end marker. */
    PARTIAL,
    /** The pod has no replay endpoint: purged (unless new) and went on from the live batch. */
    ABSENT,
    /** The replay ended without a batch. */
    EMPTY,
    /** The replay said nothing within the idle bound. */
    SILENT,
    /** The replay began after the gap's first batch: its ring no longer holds it. */
    BEYOND_RING,
    /** The replay sent more than the stream may hold: dropped, purged, went on from live. */
    TOO_LARGE
  }

  private final int maxPending;
  private final long maxPendingBytes;
  private final KeyMode mode;
  private final MemoryBudget budget;
  private int mergeBlocks;

  /**
   * Batches up to this sequence are applied one at a time (a merged apply was rejected, or its
   * first batch was part applied).
   */
  private long aloneThrough = -1;

  private final TreeMap<Long, Batch> pending = new TreeMap<>();
  private long pendingBytes;
  private long liveBytes;
  private final Map<Long, Integer> recent = new LinkedHashMap<>(RECENT * 2, 0.75f, false);
  private long expected = -1;
  private long applied = -1;
  private long lastLive = -1;
  private Purge purge;
  private int restarts;
  private boolean asleep;
  private long sleptAfter = -1;
  private long refetched = -1;
  private boolean rebuilding;
  private boolean stagedAny;

  /**
   * A rebuild taken over from another owner: what that owner received and never applied is only in
   * the replay ring, so nothing is published before one catch-up has answered.
   */
  private boolean catchUpOwed;

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
    this.maxPending = maxPending;
    this.maxPendingBytes = maxPendingBytes;
    this.mode = mode;
    this.mergeBlocks = mergeBlocks;
    this.budget = budget;
  }

  /** A sequencer whose batches no process budget bounds. */
  public Sequencer(int maxPending, long maxPendingBytes, KeyMode mode, int mergeBlocks) {
    this(maxPending, maxPendingBytes, mode, mergeBlocks, MemoryBudget.unbounded());
  }

  /** A sequencer that applies one batch per call. */
  public Sequencer(int maxPending, long maxPendingBytes) {
    this(maxPending, maxPendingBytes, KeyMode.ENGINE, 0);
  }

  /** Bytes of the batches waiting, live and replayed ({@link Batch#bytes()}). */
  public long pendingBytes() {
    return pendingBytes;
  }

  /** Bytes of the replayed batches waiting: history a replay window brought, not applied yet. */
  public long replayedBytes() {
    return pendingBytes - liveBytes;
  }

  /** Holds a batch whose bytes the budget has counted already. */
  private void hold(Batch batch) {
    Batch before = pending.put(batch.seq(), batch);
    if (before != null) {
      forget(before);
    }
    pendingBytes += batch.bytes();
    if (batch.live()) {
      liveBytes += batch.bytes();
    }
  }

  private static MemoryBudget.Use use(Batch batch) {
    return batch.live() ? MemoryBudget.Use.LIVE : MemoryBudget.Use.REPLAY;
  }

  private void forget(Batch gone) {
    pendingBytes -= gone.bytes();
    if (gone.live()) {
      liveBytes -= gone.bytes();
    }
    budget.give(use(gone), gone.bytes());
  }

  private void release(long seq) {
    Batch gone = pending.remove(seq);
    if (gone != null) {
      forget(gone);
    }
  }

  private void releaseAll() {
    pending.values().forEach(this::forget);
    pending.clear();
  }

  /**
   * Lets go of the replayed history waiting (live batches stay): past a gap it cannot be applied
   * before the gap is repaired, and its bytes leave the replay window no room for the gap. Read
   * again after the gap (what is not held is replayed later, as a gap). Returns whether any was
   * held.
   */
  public boolean dropHistory() {
    List<Long> replayed = new ArrayList<>();
    pending.forEach(
        (seq, b) -> {
          if (!b.live()) {
            replayed.add(seq);
          }
        });
    replayed.forEach(this::release);
    return !replayed.isEmpty();
  }

  /** The stream stops: every batch held is let go, its bytes given back to the budget. */
  public void release() {
    releaseAll();
  }

  /**
   * The next sequence to apply: a batch below it is applied already (a replay's copy of one is only
   * compared with it), or -1 before the watermark is read.
   */
  public long expected() {
    return expected;
  }

  /** Whether the stream's watermark has been read from the index. */
  public boolean started() {
    return expected >= 0;
  }

  /** Starts the stream after the index's watermark ({@code -1} when it has none). */
  public void start(long watermark) {
    start(watermark, false);
  }

  /**
   * Starts the stream after the index's watermark; {@code staged}: a former owner was rebuilding it
   * (its entries are not yet shown), so this owner goes on rebuilding and publishes.
   */
  public void start(long watermark, boolean staged) {
    expected = watermark + 1;
    applied = watermark;
    rebuilding = watermark < 0 || staged; // a new stream starts from what its engine can replay
    stagedAny = staged;
    catchUpOwed = staged;
  }

  /** The last applied sequence, or -1. */
  public long applied() {
    return applied;
  }

  /** Engine restarts seen so far. */
  public int restarts() {
    return restarts;
  }

  public boolean purgePending() {
    return purge != null;
  }

  public int pendingBatches() {
    return pending.size();
  }

  /** The batch waiting with the lowest sequence, or null when none waits. */
  public Batch oldestPending() {
    Map.Entry<Long, Batch> first = pending.firstEntry();
    return first == null ? null : first.getValue();
  }

  /** A live batch arrived. */
  public Live live(Batch batch) {
    long seq = batch.seq();
    if (seq < expected) {
      Integer seen = recent.get(seq);
      boolean resent = seen != null && seen == batch.payloadHash();
      boolean late = lastLive >= 0 && seq > lastLive;
      if (resent || late) {
        lastLive = Math.max(lastLive, seq);
        return Live.DUPLICATE;
      }
      restart();
      lastLive = seq;
      budget.take(MemoryBudget.Use.LIVE, batch.bytes()); // the new engine's first batch: kept
      hold(batch);
      return Live.RESTART;
    }
    lastLive = Math.max(lastLive, seq);
    if (pending.containsKey(seq)) {
      return Live.DUPLICATE; // a second copy of a batch still waiting
    }
    if (pending.size() >= maxPending || liveBytes + batch.bytes() > maxPendingBytes) {
      return Live.DROPPED;
    }
    if (!budget.tryTake(MemoryBudget.Use.LIVE, batch.bytes())) {
      return Live.OVER_BUDGET;
    }
    hold(batch);
    return Live.QUEUED;
  }

  /**
   * The engine's sleep state, as its {@code /metrics} said at the last scrape. Falling asleep
   * purges the stream; while asleep, nothing from before the sleep adds a block.
   */
  public void asleep(boolean nowAsleep) {
    if (nowAsleep && !asleep) {
      sleptAfter =
          Math.max(Math.max(expected - 1, lastLive), pending.isEmpty() ? -1 : pending.lastKey());
      requestPurge("sleep");
    }
    asleep = nowAsleep;
  }

  /**
   * The engine restarted (a new incarnation, or a sequence below the watermark): whatever is
   * pending belonged to the old engine; purge, forget the watermark, go on from sequence 0.
   */
  public void restart() {
    restarts++;
    releaseAll();
    recent.clear();
    lastLive = -1; // the old process's sequences say nothing about the new one's
    purge = new Purge("engine_restart", PurgeMode.RESET_WATERMARK, 0);
  }

  /**
   * The index lost what it held of this stream, or may have (Redis restarted empty, a failover lost
   * acknowledged writes, a FLUSHDB): start again as a new stream would, from what the engine can
   * replay. Whatever the index still holds is purged first (an older state would say the pod holds
   * blocks it has since removed); the batches waiting are the engine's and stay.
   */
  public void indexLost() {
    recent.clear();
    purge = new Purge("index_reset", PurgeMode.RESET_WATERMARK, 0);
  }

  /**
   * A router found the index listing blocks the engine no longer holds (its drift resync request):
   * purge the stream, forget the watermark and apply again what the replay ring still covers, from
   * its oldest batch. The batches waiting stay. A pending purge that starts over from 0 already
   * does all of that and is kept; any other is replaced.
   */
  public void resync() {
    if (purge != null && purge.mode() == PurgeMode.RESET_WATERMARK && purge.continueFrom() == 0) {
      return;
    }
    recent.clear();
    purge = new Purge("drift", PurgeMode.RESET_WATERMARK, 0);
  }

  /** Asks for a purge (a level-triggered caller may ask again; one pending purge is enough). */
  public void requestPurge(String reason) {
    if (purge == null) {
      purge = new Purge(reason, PurgeMode.KEEP_WATERMARK, -1);
    }
  }

  /** The next thing to do. */
  public Action next() {
    if (purge != null) {
      return new RunPurge(purge);
    }
    while (!pending.isEmpty()) {
      long first = pending.firstKey();
      if (first < expected) {
        release(first); // applied meanwhile (a replay, or a lost reply)
      } else if (first > expected) {
        return new RepairGap(expected, first, false);
      } else {
        Batch batch = pending.firstEntry().getValue();
        Batch toApply = whileAsleep(batch);
        if (toApply == batch && batch.malformed() != null) {
          if (batch.live() && refetched != first) {
            refetched = first;
            return new RepairGap(first, first + 1, true);
          }
          // Neither the live copy nor the ring's could be read: what it changed is lost.
          release(first);
          goOnFrom(first + 1, "malformed_batch");
          return next();
        }
        return withFollowers(toApply);
      }
    }
    // Shown only once past every live batch seen (applied, or gone past on purpose): one dropped
    // for want of room is still missing (the next live batch's gap, or a quiet stream's catch-up,
    // brings it).
    if (rebuilding && stagedAny && !catchUpOwed && expected > lastLive) {
      return new Publish();
    }
    return new Idle();
  }

  /**
   * The stream's next batch, with the consecutive batches waiting after it that fit one apply call
   * with it: a stream behind its engine catches up in fewer round trips. A batch that cannot be
   * read ends the run (it has its own repair).
   */
  private Apply withFollowers(Batch head) {
    if (mergeBlocks <= 0 || head.seq() <= aloneThrough) {
      return new Apply(head, rebuilding);
    }
    long blocks = BatchCheck.chunkBlocks(mode, head.events().events());
    List<Batch> parts = new ArrayList<>(List.of(head));
    for (Batch b : pending.tailMap(head.seq(), false).values()) {
      boolean next = b.seq() == head.seq() + parts.size() && b.seq() > aloneThrough;
      if (!next || b.malformed() != null || parts.size() >= MAX_PARTS) {
        break;
      }
      Batch part = whileAsleep(b);
      blocks += BatchCheck.chunkBlocks(mode, part.events().events());
      if (blocks > mergeBlocks) {
        break;
      }
      parts.add(part);
    }
    if (parts.size() == 1) {
      return new Apply(head, rebuilding);
    }
    int bytes = 0;
    for (Batch p : parts) {
      bytes += p.bytes();
    }
    Batch tail = parts.get(parts.size() - 1);
    KvEventBatch merged = KvEventBatch.concat(parts.stream().map(Batch::events).toList());
    return new Apply(
        new Batch(tail.seq(), tail.payloadHash(), merged, null, tail.live(), bytes),
        rebuilding,
        parts);
  }

  /**
   * Applies consecutive waiting batches as one only while their blocks fit {@code blocks}, less
   * than a call's chunk, so that each call has room for what else it carries (an eviction model's
   * changes).
   */
  public void mergeWithin(int blocks) {
    this.mergeBlocks = Math.min(mergeBlocks, blocks);
  }

  /** What the publish asked for by {@link Publish} did; true when it is done. */
  public boolean published(PurgeStatus status) {
    if (status != PurgeStatus.PURGED) {
      return false;
    }
    rebuilding = false;
    stagedAny = false;
    return true;
  }

  /**
   * A batch as it may be applied: while the engine sleeps, one from before the sleep (or from the
   * replay ring) without its events; a live batch newer than the sleep shows the engine awake.
   */
  private Batch whileAsleep(Batch batch) {
    if (!asleep) {
      return batch;
    }
    if (batch.live() && batch.seq() > sleptAfter) {
      asleep = false; // the engine publishes again: it is awake, whatever the last scrape said
      return batch;
    }
    return batch.emptied();
  }

  /** Whether a quiet stream may ask its replay socket for batches after its watermark. */
  public boolean mayCatchUp() {
    return purge == null && pending.isEmpty() && started();
  }

  /**
   * The sequence a catch-up asks for: everything after the watermark, and the last applied batch
   * too when it is remembered, so that {@link #sameEngine} can compare the ring's copy with it.
   */
  public long catchUpFrom() {
    return checkable(expected);
  }

  /** The sequence the replay for {@code gap} asks from (one early, as for a catch-up). */
  public long replayFrom(RepairGap gap) {
    return gap.malformed() ? gap.from() : checkable(gap.from());
  }

  private long checkable(long from) {
    return from > 0 && from == expected && recent.containsKey(from - 1) ? from - 1 : from;
  }

  /**
   * Whether the replayed batches were published by the engine whose batches were applied: a ring's
   * copy of an applied batch that is not the batch applied (another payload under the same
   * sequence) comes from a new process, one whose sequence numbers passed the watermark before the
   * live socket heard it, so that no sequence ever went backwards. Then {@link #restart}.
   */
  public boolean sameEngine(List<Batch> replayed) {
    for (Batch b : replayed) {
      Integer applied = b.seq() < expected && b.malformed() == null ? recent.get(b.seq()) : null;
      if (applied != null && applied != b.payloadHash()) {
        return false;
      }
    }
    return true;
  }

  /** The replayed batches not yet applied (a catch-up or replay starts one early). */
  public List<Batch> notApplied(List<Batch> replayed) {
    return replayed.stream().filter(b -> b.seq() >= expected).toList();
  }

  /**
   * Batches a catch-up returned; they are applied in order like live ones. A ring's readable copy
   * replaces a live one that could not be read. At most as many batches are held as live ones may
   * wait: when full, the newest batch waiting makes room for an older one (it is replayed later, as
   * a gap), and what is newer than all of them is left to the next replay.
   */
  public void caughtUp(List<Batch> batches) {
    catchUpOwed = false;
    for (Batch b : batches) {
      Batch held = pending.get(b.seq());
      boolean wanted =
          b.seq() >= expected
              && (held == null || held.malformed() != null && b.malformed() == null);
      if (wanted && held == null && pending.size() >= maxPending && pending.lastKey() > b.seq()) {
        release(pending.lastKey()); // the newest waits again, as a gap: what comes next goes first
      }
      if (wanted && (held != null || pending.size() < maxPending)) {
        budget.take(use(b), b.bytes());
        hold(b);
      }
    }
  }

  /**
   * The last replay stopped at its window, before the ring's end: more history is to be fetched, so
   * the rebuild is not published until a later catch-up or replay has reached the end.
   */
  public void historyCut() {
    catchUpOwed = true;
  }

  /** How many more batches may be held now (what a replay window may bring at most). */
  public int room() {
    return Math.max(0, maxPending - pending.size());
  }

  /**
   * The index refused the batch the sequencer asked to apply as one it can never apply: the stream
   * goes on after it, purged first (what the index holds of it can no longer be trusted).
   */
  public void rejected(Batch batch) {
    release(batch.seq());
    goOnFrom(batch.seq() + 1, "batch_rejected");
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
    aloneThrough = Math.max(aloneThrough, apply.batch().seq());
  }

  /** What the purge asked for by {@link RunPurge} did; true when it is done. */
  public boolean purged(PurgeStatus status) {
    if (status != PurgeStatus.PURGED) {
      return false;
    }
    if (purge.mode() == PurgeMode.RESET_WATERMARK) {
      applied = -1;
      rebuilding = true;
      stagedAny = false;
    }
    if (purge.continueFrom() >= 0) {
      expected = purge.continueFrom();
    }
    purge = null;
    return true;
  }

  /**
   * What the apply asked for by {@link Apply} did. APPLIED advances the stream; DUPLICATE and GAP
   * take the index's watermark (the batch then waits, or is dropped if already applied); FENCED and
   * SWALLOWED leave everything as it was.
   */
  public void applied(Batch batch, ApplyResult result) {
    applied(new Apply(batch, false), result);
  }

  /**
   * {@link #applied(Batch, ApplyResult)} for what {@link Apply} asked for, one batch or several.
   */
  public void applied(Apply apply, ApplyResult result) {
    switch (result.status()) {
      case APPLIED -> {
        if (rebuilding) {
          // Live batches too: the stream is shown once it has caught up with its engine, not
          // while the live backlog queued during the replay is still being applied.
          stagedAny = true;
        }
        for (Batch part : apply.parts()) {
          release(part.seq());
          recent.put(part.seq(), part.payloadHash());
          if (recent.size() > RECENT) {
            recent.remove(recent.keySet().iterator().next());
          }
        }
        expected = apply.batch().seq() + 1;
        applied = apply.batch().seq();
      }
      case DUPLICATE, GAP -> {
        expected = result.watermark() + 1;
        applied = result.watermark();
      }
      default -> {
        // FENCED stops the worker; SWALLOWED is tried again after a backoff
      }
    }
  }

  /**
   * The pod has no replay endpoint: what the gap lost cannot be recovered, so the stream is purged
   * (unless it never applied anything) and goes on from the first live batch.
   */
  public GapRepair noReplay(RepairGap gap) {
    goOnFrom(gap.firstLive(), gap.malformed() ? "malformed_batch" : "gap_no_replay");
    return GapRepair.ABSENT;
  }

  /**
   * What a replay from {@code gap.from()} returned.
   *
   * @param ended whether the end marker arrived
   */
  public GapRepair replayed(RepairGap gap, List<Batch> batches, boolean ended) {
    if (batches.isEmpty()) {
      goOnFrom(gap.firstLive(), gap.malformed() ? "malformed_batch" : "gap_replay_failed");
      return ended ? GapRepair.EMPTY : GapRepair.SILENT;
    }
    caughtUp(batches);
    long first = pending.firstKey();
    if (first > expected) {
      goOnFrom(first, "gap_beyond_ring");
      return GapRepair.BEYOND_RING;
    }
    return ended ? GapRepair.COVERED : GapRepair.PARTIAL;
  }

  /**
   * A replay for {@code gap} had no room for a batch, but the ring's oldest batch, {@code oldest},
   * is past the gap's start: no replay can cover it, so the stream goes on from there.
   */
  public GapRepair beyondRing(RepairGap gap, long oldest) {
    goOnFrom(Math.min(oldest, gap.firstLive()), "gap_beyond_ring");
    return GapRepair.BEYOND_RING;
  }

  /** The replay sent more than the stream may hold: what it covered is lost. */
  public GapRepair replayTooLarge(RepairGap gap) {
    goOnFrom(gap.firstLive(), gap.malformed() ? "malformed_batch" : "replay_too_large");
    return GapRepair.TOO_LARGE;
  }

  private void goOnFrom(long seq, String reason) {
    if (applied < 0) {
      expected = seq; // a new stream: nothing of it is in the index to be wrong
    } else {
      purge = new Purge(reason, PurgeMode.RESET_WATERMARK, seq);
    }
  }
}
