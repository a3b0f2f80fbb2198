package io.kvindex.ingester.stream;

import io.kvindex.ingester.Shared;
import io.kvindex.ingester.stream.Action.RepairGap;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream's gap repairs: the batches a gap (or an unreadable batch) skipped, replayed from the
 * engine's ring under the stream's replay slot and handed to the sequencer, or the sequencer told
 * why they cannot be. Not thread-safe: the stream's worker thread uses it.
 */
final class GapRepairs {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  private final Shared shared;
  private final Sequencer sequencer;
  private final ReplaySlot slot;
  private final CatchUp catchUp;
  private final String label;
  private final Consumer<List<Batch>> anotherEngine;
  private final Runnable backOff;

  /**
   * {@code anotherEngine}: the ring holds another payload under a sequence this stream applied (a
   * new process); {@code backOff}: the repair is asked for again after a backoff.
   */
  GapRepairs(
      Shared shared,
      Sequencer sequencer,
      ReplaySlot slot,
      CatchUp catchUp,
      String label,
      Consumer<List<Batch>> anotherEngine,
      Runnable backOff) {
    this.shared = shared;
    this.sequencer = sequencer;
    this.slot = slot;
    this.catchUp = catchUp;
    this.label = label;
    this.anotherEngine = anotherEngine;
    this.backOff = backOff;
  }

  /** Repairs {@code gap}; whether the stream goes on at once. */
  boolean repair(RepairGap gap) {
    if (!gap.malformed()) {
      shared.metrics().gap();
    }
    String endpoint = slot.endpoint();
    GapRepair repair;
    if (endpoint == null) {
      repair = sequencer.noReplay(gap);
    } else {
      if (!slot.take()) {
        return false; // asked again at the next step, in line for a slot
      }
      log.info(
          "{}: {} {}..{}, replaying from {}",
          label,
          gap.malformed() ? "unreadable batch" : "gap",
          gap.from(),
          gap.firstLive() - 1,
          gap.from());
      try (ReplayWindow w = slot.read(endpoint, sequencer.replayFrom(gap), Long.MAX_VALUE)) {
        List<Batch> replayed = w.batches();
        if (!w.tooLarge() && !sequencer.sameEngine(replayed)) {
          anotherEngine.accept(replayed);
          return true;
        }
        replayed = sequencer.notApplied(replayed);
        if (w.cut() && replayed.isEmpty() && w.firstOffered() > gap.from()) {
          // No room for a batch, but the ring's oldest is past the gap: no window can cover it.
          repair = sequencer.beyondRing(gap, w.firstOffered());
          catchUp.historyRead(w);
        } else if (w.cut() && replayed.isEmpty()) {
          // The ring covers the gap but the window had no room for its first batch: history held
          // past the gap took it, and cannot be applied before the gap. It is let go (read again
          // later) and the gap asked for at once; with nothing to let go, after a backoff.
          shared.metrics().replay("cut");
          catchUp.historyRead(w);
          if (sequencer.dropHistory()) {
            return true;
          }
          backOff.run();
          return false;
        } else {
          repair =
              w.tooLarge()
                  ? sequencer.replayTooLarge(gap)
                  : sequencer.replayed(gap, replayed, w.ended());
          catchUp.historyRead(w);
          if (w.cut()) {
            shared.metrics().replay("cut");
            return true;
          }
        }
      }
    }
    shared.metrics().replay(repair.name().toLowerCase(Locale.ROOT));
    if (repair != GapRepair.COVERED && repair != GapRepair.PARTIAL) {
      if (sequencer.purgePending()) {
        log.warn(
            "{}: replay {} cannot cover {}..{}; purging and going on from the oldest batch held",
            label,
            repair.name().toLowerCase(Locale.ROOT),
            gap.from(),
            gap.firstLive() - 1);
      } else {
        log.info("{}: new stream; starting after the gap ({})", label, repair);
      }
    }
    return true;
  }
}
