package io.kvindex.ingester.stream;

import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One stream's replays: the budget's replay slot it holds while it reads its engine's ring, the
 * windows it reads into, and what it still owes to read ({@link Owed}). Not thread-safe: the
 * stream's worker thread uses it.
 *
 * <p>A replay (a gap's repair, a catch-up, a model's priming) is read only while the stream holds
 * one of the budget's replay slots, and into one window of it: a longer history is read window by
 * window, each applied before the next is asked for, and the slot is kept until the history is in.
 * A stream told to wait for a slot stays in line for as long as it asks again at each step.
 */
final class ReplaySlot {
  /** How long a priming that waits for a replay slot sleeps before it asks again. */
  static final Duration SLOT_WAIT = Duration.ofMillis(50);

  private final Shared shared;
  private final StreamId id;
  private final KeyMode mode;
  private final PodSpec pod;
  private final MemoryBudget memory;
  private final Sequencer sequencer;
  private final StreamStatus status;
  private final BatchIntake intake;
  private Owed owed = Owed.NOTHING;

  /** This step asked for a replay slot and was told to wait. */
  private boolean wanted;

  ReplaySlot(
      Shared shared,
      StreamId id,
      KeyMode mode,
      PodSpec pod,
      Sequencer sequencer,
      StreamStatus status,
      BatchIntake intake) {
    this.shared = shared;
    this.id = id;
    this.mode = mode;
    this.pod = pod;
    this.memory = shared.memory();
    this.sequencer = sequencer;
    this.status = status;
    this.intake = intake;
  }

  /** The engine's replay endpoint, null when it has none. */
  String endpoint() {
    return pod.replayEndpoint(id.dpRank());
  }

  Owed owed() {
    return owed;
  }

  void on(Owed.Event event) {
    owed = owed.on(event);
  }

  /** Starts a step: the stream has not asked for a slot yet. */
  void stepStarted() {
    wanted = false;
  }

  /**
   * Whether this stream holds a replay slot now; when it must wait, it stays in line for as long as
   * it asks again at each step.
   */
  boolean take() {
    if (memory.slots().tryAcquire(id)) {
      return true;
    }
    wanted = true;
    return false;
  }

  /** Reads a replay from {@code from} (this stream holds a slot) into a window of the budget. */
  ReplayWindow read(String endpoint, long from, long through) {
    ReplayWindow w =
        new ReplayWindow(
            memory.window(sequencer.replayedBytes()),
            memory.windowBytes(),
            mode,
            from,
            sequencer.expected(),
            through,
            shared.config().maxPendingBatches(),
            intake::malformed,
            intake::learnFrom);
    w.read(
        Replay.fetch(
            shared.zmq(),
            endpoint,
            from,
            shared.config().replayIdleTimeout(),
            shared.config().memoryBounds().messageBytes(),
            memory,
            w));
    if (w.ended() || w.tooLarge() || !w.batches().isEmpty()) {
      status.aliveAt(shared.nanos()); // the engine's replay socket answered
    }
    return w;
  }

  /**
   * After a replay's batches went to the sequencer: one cut at its window leaves history to read,
   * which the next catch-up or gap fetches (nothing is published before), the slot kept meanwhile.
   * Returns whether it was cut.
   */
  boolean historyRead(ReplayWindow w) {
    on(w.cut() ? Owed.Event.HISTORY_CUT : Owed.Event.HISTORY_READ);
    if (w.cut()) {
      sequencer.historyCut();
    }
    return w.cut();
  }

  /**
   * Ends a step: the slot goes back once the stream holds no history and owes none, and a stream
   * that did not ask for one this step leaves the line.
   */
  void stepEnded() {
    if (!wanted && !owed.history() && sequencer.replayedBytes() == 0) {
      memory.slots().release(id);
    }
  }

  /** Gives the slot back, or leaves the line (the worker ends). */
  void release() {
    memory.slots().release(id);
  }

  /**
   * Primes the model from the engine's ring, up to the watermark (what the index applied); returns
   * the batches taken in. No ring, or one too large to fetch, leaves the model empty. While a slot
   * is refused it waits ({@code park}) as long as the worker runs.
   */
  int prime(EvictionModel model, BooleanSupplier running, Consumer<Duration> park) {
    String endpoint = endpoint();
    long through = sequencer.applied();
    if (endpoint == null || through < 0) {
      return 0;
    }
    int primed = 0;
    long from = 0;
    while (running.getAsBoolean()) {
      if (!take()) {
        park.accept(SLOT_WAIT);
        continue;
      }
      try (ReplayWindow w = read(endpoint, from, through)) {
        if (w.tooLarge()) {
          shared.metrics().replay("too_large");
          return primed;
        }
        List<Batch> history = w.batches();
        if (!history.isEmpty()) {
          long last = history.get(history.size() - 1).seq();
          model.prime(history, Math.min(through, last));
          primed += history.size();
          from = last + 1;
        }
        if (!w.cut() || history.isEmpty()) {
          return primed;
        }
      }
    }
    return primed;
  }
}
