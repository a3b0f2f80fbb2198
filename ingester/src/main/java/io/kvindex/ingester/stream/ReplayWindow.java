package io.kvindex.ingester.stream;

import io.kvindex.index.KeyMode;
import io.kvindex.wire.EventMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * One replay read into a window of the memory budget: each batch decoded as it arrives and counted
 * in the window, until the window is full (the replay is cut there; the rest is left to a later
 * replay), the ring's end, or a batch past {@code through}. A batch the stream has applied already
 * (below {@code comparedBelow}: a replay starts one early, to compare the ring's copy of the last
 * batch applied with it) is kept without its events and takes no room in the window, or a window
 * with room for one batch would be cut before the first one asked for, every time. {@link #close}
 * gives the window's bytes back once the stream's sequencer holds what it keeps. Not thread-safe:
 * the stream's worker reads it.
 */
final class ReplayWindow implements Replay.Reader, AutoCloseable {
  private final MemoryBudget.Window window;
  private final long fullWindow;
  private final KeyMode mode;
  private final long from;
  private final long comparedBelow;
  private final long through;
  private final int maxBatches;
  private final Consumer<Batch> malformed;
  private final BiConsumer<EventMessage, Batch> taken;
  private final List<Batch> batches = new ArrayList<>();
  private boolean tooLarge;
  private boolean reachedThrough;
  private long firstOffered = -1;
  private Replay.Read read = new Replay.Read(false, false);

  /**
   * @param window the bytes it may hold
   * @param fullWindow what a window holds when its stream holds no history: a batch larger than
   *     this can never be replayed
   * @param from batches below it are passed over (a ring may send more than was asked)
   * @param comparedBelow batches below it are applied already, and kept only to be compared
   * @param through a batch past it ends the read
   * @param maxBatches the most batches it holds
   * @param malformed told of each batch that cannot be read
   * @param taken shown each readable batch taken, with its message (the key check samples history
   *     too: a new stream's first batches come from its ring)
   */
  ReplayWindow(
      MemoryBudget.Window window,
      long fullWindow,
      KeyMode mode,
      long from,
      long comparedBelow,
      long through,
      int maxBatches,
      Consumer<Batch> malformed,
      BiConsumer<EventMessage, Batch> taken) {
    this.taken = taken;
    this.window = window;
    this.fullWindow = fullWindow;
    this.mode = mode;
    this.from = from;
    this.comparedBelow = comparedBelow;
    this.through = through;
    this.maxBatches = maxBatches;
    this.malformed = malformed;
  }

  @Override
  public boolean take(EventMessage message) {
    long seq = message.seq();
    if (firstOffered < 0) {
      firstOffered = seq;
    }
    if (seq < from || !batches.isEmpty() && seq <= batches.get(batches.size() - 1).seq()) {
      return true; // not asked for, or not in order: passed over
    }
    if (seq > through) {
      reachedThrough = true;
      return false;
    }
    if (batches.size() >= maxBatches) {
      return false;
    }
    Batch batch = Batch.decode(message, false, mode);
    if (seq < comparedBelow) {
      batches.add(batch.compared());
      return true;
    }
    if (!window.tryTake(batch.bytes())) {
      tooLarge = batch.bytes() > fullWindow;
      return false;
    }
    if (batch.malformed() != null) {
      malformed.accept(batch);
    } else {
      taken.accept(message, batch);
    }
    batches.add(batch);
    return true;
  }

  /** Records how the read ended. */
  ReplayWindow read(Replay.Read how) {
    this.read = how;
    return this;
  }

  /** The batches taken, in order. */
  List<Batch> batches() {
    return batches;
  }

  /** Whether the ring's end marker arrived. */
  boolean ended() {
    return read.ended();
  }

  /** Whether the window filled before the ring's end: the rest is to be fetched by another. */
  boolean cut() {
    return read.cut() && !reachedThrough && !tooLarge;
  }

  /** Whether a batch is larger than any window: no replay can bring it (nor what follows it). */
  boolean tooLarge() {
    return tooLarge;
  }

  /**
   * The sequence of the first batch the ring sent, taken or not (its oldest at or after the one
   * asked for), or -1 when it sent none.
   */
  long firstOffered() {
    return firstOffered;
  }

  /** Bytes the window holds. */
  long bytes() {
    return window.held();
  }

  @Override
  public void close() {
    window.close();
  }
}
