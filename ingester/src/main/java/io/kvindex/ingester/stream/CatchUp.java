package io.kvindex.ingester.stream;

import io.kvindex.ingester.Shared;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream's catch-ups: a quiet stream asks its engine's ring for anything after its watermark that
 * it may have missed, and so does one whose live socket reconnected, whatever waits. Not
 * thread-safe: the stream's worker thread uses it.
 *
 * <p>A catch-up that finds batches published and none received live since the last one takes the
 * live socket for deaf (a connection can stay stuck in its handshake, seen with jeromq on loopback)
 * and has it reopened: a new socket subscribes afresh, and the replay covers what the switch
 * misses.
 */
final class CatchUp {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  private final Shared shared;
  private final Sequencer sequencer;
  private final StreamStatus status;
  private final ReplaySlot slot;
  private final String label;
  private final Consumer<List<Batch>> anotherEngine;
  private final Runnable progress;
  private final Runnable closeSocket;
  private long quietSinceNanos;
  private long liveAtLastCatchUp = -1;

  /**
   * {@code anotherEngine}: the ring holds another payload under a sequence this stream applied (a
   * new process); {@code progress}: carries out the sequencer's actions until something must wait;
   * {@code closeSocket}: closes the live socket, which the next step opens again.
   */
  CatchUp(
      Shared shared,
      Sequencer sequencer,
      StreamStatus status,
      ReplaySlot slot,
      String label,
      Consumer<List<Batch>> anotherEngine,
      Runnable progress,
      Runnable closeSocket) {
    this.shared = shared;
    this.sequencer = sequencer;
    this.status = status;
    this.slot = slot;
    this.label = label;
    this.anotherEngine = anotherEngine;
    this.progress = progress;
    this.closeSocket = closeSocket;
    this.quietSinceNanos = shared.nanos();
  }

  /** A live batch arrived at {@code nanos}: the stream is not quiet. */
  void heard(long nanos) {
    quietSinceNanos = nanos;
  }

  /** Catches up if the stream has been quiet for {@code --idle-catch-up}. */
  void ifQuiet() {
    if (shared.nanos() - quietSinceNanos > shared.config().idleCatchUp().toNanos()) {
      quietSinceNanos = shared.nanos();
      run(false);
    }
  }

  /**
   * The stream asks its ring at its next step rather than after a quiet spell: after a purge, the
   * new history is there, and an engine that went quiet would otherwise look cold for {@code
   * --idle-catch-up}; after a takeover, what the engine published since, or removed while its
   * stream was quiet, is there.
   */
  void soon() {
    quietSinceNanos = shared.nanos() - shared.config().idleCatchUp().toNanos() - 1;
  }

  /** {@link ReplaySlot#historyRead}; a cut replay asks its ring again soon. */
  void historyRead(ReplayWindow w) {
    if (slot.historyRead(w)) {
      soon();
    }
  }

  /**
   * A quiet stream asks for anything after its watermark that it may have missed; so does one whose
   * live socket reconnected ({@code reconnected}), whatever waits. A stream that must wait for a
   * replay slot asks again at its next step.
   *
   * <p>A reconnect's check that found no copy of an applied batch to compare (the ring of a new
   * process that has not published as far yet, or a ring that did not answer) is made again before
   * the next live batch is applied; that second check settles it whatever it finds.
   */
  void run(boolean reconnected) {
    String endpoint = slot.endpoint();
    boolean may =
        reconnected ? sequencer.started() && !sequencer.purgePending() : sequencer.mayCatchUp();
    if (endpoint == null || !may) {
      checked(reconnected, true);
      return;
    }
    if (!slot.take()) {
      if (!reconnected) {
        soon();
      }
      return;
    }
    List<Batch> replayed;
    boolean applyNow = false;
    try (ReplayWindow w = slot.read(endpoint, sequencer.catchUpFrom(), Long.MAX_VALUE)) {
      replayed = w.batches();
      if (w.tooLarge()) {
        checked(reconnected, true);
        shared.metrics().replay("too_large");
      } else if (!sequencer.sameEngine(replayed)) {
        checked(reconnected, true);
        anotherEngine.accept(replayed);
      } else if (reconnected) {
        checked(true, sequencer.compared(replayed) || slot.owed().reconnectCheckRetried());
        shared.metrics().replay("reconnect");
        sequencer.caughtUp(sequencer.notApplied(replayed));
        historyRead(w);
        return;
      } else if (!(replayed = sequencer.notApplied(replayed)).isEmpty()) {
        log.info("{}: quiet stream caught up {} batches from replay", label, replayed.size());
        shared.metrics().replay(w.cut() ? "cut" : "idle_catch_up");
        sequencer.caughtUp(replayed);
        applyNow = true;
      } else if (w.ended()) {
        sequencer.caughtUp(List.of()); // nothing newer than the watermark
      }
      historyRead(w);
    }
    if (applyNow) {
      progress.run();
      if (status.liveReceived() == liveAtLastCatchUp) {
        reopenDeafSocket(replayed.size());
      }
    }
    liveAtLastCatchUp = status.liveReceived();
  }

  /** A reconnect's check was made: {@code settled} when it compared, or can compare no better. */
  private void checked(boolean reconnected, boolean settled) {
    if (reconnected) {
      slot.on(settled ? Owed.Event.CHECKED : Owed.Event.INCONCLUSIVE);
    }
  }

  /** The publisher published batches that never reached this SUB socket since the last catch-up. */
  private void reopenDeafSocket(int published) {
    log.warn(
        "{}: {} batches published but none received live; reopening the SUB socket",
        label,
        published);
    shared.metrics().reconnect();
    closeSocket.run();
  }
}
