package io.kvindex.ingester.stream;

import io.kvindex.common.Await;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.BatchRejectedException;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.index.StreamWrites;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.stream.Action.Apply;
import io.kvindex.ingester.stream.Action.RunPurge;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One stream's writes to the index under its lease: the purges and batches its sequencer asks for,
 * with what each answer means counted and logged, and told to the sequencer. Not thread-safe: the
 * stream's worker thread makes them.
 */
final class IndexWrites {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  /** What a write means for the worker. */
  enum Outcome {
    /** Done (or already done): go on. */
    DONE,
    /** A temporary error outlasted the retries: the work stays; try again after a backoff. */
    WAIT,
    /** The index lost what it held of the stream: start again from what the engine can replay. */
    LOST
  }

  /** A write was refused because a newer owner holds the lease. */
  static final class FencedException extends RuntimeException {
    FencedException() {
      super("fenced", null, false, false);
    }
  }

  private final Shared shared;
  private final StreamId id;
  private final KeyMode mode;
  private final Lease lease;
  private final String label;

  /** The stream's keys in the index, derived once for its applies. */
  private final StreamWrites.Keys keys;

  private static final long REJECT_LOG_INTERVAL_NANOS = 10_000_000_000L;
  private boolean loggedReject;
  private long lastRejectLogNanos;
  private long rejectedSinceLog;

  IndexWrites(Shared shared, StreamId id, KeyMode mode, Lease lease, String label) {
    this.shared = shared;
    this.id = id;
    this.mode = mode;
    this.lease = lease;
    this.label = label;
    this.keys = shared.index().keys(id, mode);
  }

  /**
   * Runs the purge the sequencer asked for; the eviction model, if any, loses what the index lost.
   */
  Outcome purge(Sequencer sequencer, RunPurge action, EvictionModel model) {
    String reason = action.purge().reason();
    PurgeStatus status = shared.index().purge(id, lease, action.purge().mode());
    if (status == PurgeStatus.FENCED) {
      throw new FencedException();
    }
    if (status == PurgeStatus.RESET) {
      return Outcome.LOST;
    }
    if (sequencer.purged(status)) {
      if (model != null) {
        model.clear();
      }
      shared.metrics().purge(reason, "done");
      log.info("{}: purged ({})", label, reason);
      shared.metrics().watermark(id, sequencer.applied());
      return Outcome.DONE;
    }
    shared.metrics().purge(reason, "pending");
    shared.metrics().swallowed(Operation.PURGE);
    log.warn("{}: purge ({}) met a temporary error; it stays pending", label, reason);
    return Outcome.WAIT;
  }

  /** Shows lookups what the stream's rebuild applied staged. */
  Outcome publish(Sequencer sequencer) {
    PurgeStatus status = shared.index().publish(id, lease);
    if (status == PurgeStatus.FENCED) {
      throw new FencedException();
    }
    if (status == PurgeStatus.RESET) {
      return Outcome.LOST;
    }
    if (sequencer.published(status)) {
      log.info("{}: rebuilt from the engine's replay; shown to lookups", label);
      return Outcome.DONE;
    }
    shared.metrics().swallowed(Operation.PUBLISH);
    return Outcome.WAIT;
  }

  /**
   * Applies the batch (or the consecutive batches as one) the sequencer asked for, with the
   * eviction model's pending changes after its events when the stream's evictions are inferred.
   */
  Outcome apply(Sequencer sequencer, Apply action, StreamStatus status, EvictionModel model) {
    Batch batch = action.batch();
    ApplyPlan plan = plan(action, model);
    ApplyResult result;
    try {
      result = Await.of(shared.index().applyAsync(keys, plan, lease, action.staged()));
    } catch (BatchRejectedException e) {
      if (action.parts().size() > 1) {
        log.info(
            "{}: batches {}..{} were refused as one ({}); applying them one at a time",
            label,
            action.firstSeq(),
            batch.seq(),
            e.reason());
        sequencer.rejected(action);
      } else {
        reject(sequencer, batch, e);
      }
      return Outcome.DONE;
    }
    ApplyStatus outcome = result.status();
    shared
        .metrics()
        .batches(
            outcome.name().toLowerCase(Locale.ROOT),
            outcome == ApplyStatus.APPLIED ? action.parts().size() : 1);
    if (outcome == ApplyStatus.FENCED) {
      throw new FencedException();
    }
    if (outcome == ApplyStatus.RESET) {
      return Outcome.LOST;
    }
    if (outcome == ApplyStatus.PARTLY_APPLIED) {
      log.info(
          "{}: batch {} was left part applied by an earlier call; applying batches {}..{} one at a"
              + " time",
          label,
          action.firstSeq(),
          action.firstSeq(),
          batch.seq());
      sequencer.oneAtATime(action);
      if (model != null) {
        model.passed(sequencer.applied());
      }
      return Outcome.DONE;
    }
    long before = sequencer.applied();
    sequencer.applied(action, result);
    for (Batch part : action.parts()) {
      if (part.clears()) {
        countClear(part.seq(), outcome);
      }
    }
    switch (outcome) {
      case APPLIED -> {
        status.appliedAt(shared.nanos());
        shared.metrics().watermark(id, sequencer.applied());
        long now = shared.clock().millis();
        for (Batch part : action.parts()) {
          shared.metrics().applied(part.events(), now);
        }
        shared.metrics().applyCall(action.parts().size());
        if (model != null) {
          EvictionModel.Carried carried = model.applied(batch.seq());
          shared.metrics().inferred(carried.evicted(), carried.restored());
        }
      }
      case DUPLICATE, GAP -> {
        if (model != null) {
          model.passed(sequencer.applied());
        }
        log.info("{}: watermark resynchronised from {} to {}", label, before, sequencer.applied());
      }
      default -> {
        shared.metrics().swallowed(Operation.APPLY);
        return Outcome.WAIT;
      }
    }
    return Outcome.DONE;
  }

  /**
   * The call's plan, made once and read by the index: the batches' own events, or, when the
   * stream's evictions are inferred, the eviction model's call for them (their events with the
   * model's changes in the room they leave).
   */
  private ApplyPlan plan(Apply action, EvictionModel model) {
    Batch batch = action.batch();
    if (model == null) {
      return ApplyPlan.of(mode, action.firstSeq(), batch.seq(), batch.events());
    }
    KvEventBatch events = model.eventsToApply(action.parts(), room(action));
    return ApplyPlan.of(mode, action.firstSeq(), batch.seq(), events);
  }

  /**
   * How many blocks of an eviction model's changes the call may carry besides its batches: a run of
   * batches must fit one apply call, a single batch is split into as many as it needs.
   */
  private long room(Apply action) {
    if (action.parts().size() == 1) {
      return Long.MAX_VALUE;
    }
    return Math.max(0, shared.index().applyChunkBlocks() - action.runBlocks());
  }

  /** A batch the index can never apply: counted, logged (at most every few seconds), gone past. */
  private void reject(Sequencer sequencer, Batch batch, BatchRejectedException e) {
    shared.metrics().batch("rejected");
    sequencer.rejected(batch);
    rejectedSinceLog++;
    long now = shared.nanos();
    if (!loggedReject || now - lastRejectLogNanos > REJECT_LOG_INTERVAL_NANOS) {
      loggedReject = true;
      log.warn(
          "{}: batch {} can never apply ({}: {}); the stream is purged and goes on after it{}",
          label,
          batch.seq(),
          e.reason(),
          e.getMessage(),
          rejectedSinceLog > 1 ? " (" + rejectedSinceLog + " rejected since the last line)" : "");
      lastRejectLogNanos = now;
      rejectedSinceLog = 0;
    }
  }

  private void countClear(long seq, ApplyStatus status) {
    switch (status) {
      case APPLIED -> {
        shared.metrics().purge("all_blocks_cleared", "done");
        log.info("{}: AllBlocksCleared in batch {}: purged", label, seq);
      }
      case DUPLICATE -> {
        // applied already, by an attempt whose reply was lost (or by a former owner)
        shared.metrics().purge("all_blocks_cleared", "done");
        log.info("{}: AllBlocksCleared in batch {} was already applied", label, seq);
      }
      case SWALLOWED -> {
        shared.metrics().purge("all_blocks_cleared", "pending");
        log.warn("{}: AllBlocksCleared in batch {} met a temporary error; pending", label, seq);
      }
      default -> {
        // a gap first: the clear is applied once the gap is repaired
      }
    }
  }
}
