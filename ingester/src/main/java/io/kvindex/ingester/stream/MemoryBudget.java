package io.kvindex.ingester.stream;

import io.kvindex.common.Check;
import io.kvindex.index.StreamId;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import zmq.Msg;
import zmq.msg.MsgAllocator;

/**
 * The one memory budget of an ingester process, shared by all its streams: the bytes of the batches
 * they hold decoded (waiting live batches, replayed history) and of the messages their sockets have
 * received and they have not read yet. Thread-safe.
 *
 * <p>Implementation notes. The budget is split in two halves so that neither use can starve the
 * other: {@link Use#LIVE} (live batches waiting, and what the live sockets hold unread) and {@link
 * Use#REPLAY} (replay windows being read, and the history they brought until it is applied). A live
 * batch that does not fit is refused ({@link #tryTake}: the stream drops it and replays it later as
 * a gap); a replay reads its answer in {@link Window windows} of at most {@link #windowBytes()},
 * each held by one of at most {@code replaySlots} streams at a time (the others wait for a slot, in
 * order), so history held never passes the replay half. Bytes are counted as the decoded forms hold
 * them ({@link Batch#bytes()}, an estimate of their retained heap), and a socket's unread messages
 * exactly, as its {@link Pipe} allocated them; those cannot be refused (ZeroMQ's I/O thread has
 * read them), so a socket's own high-water mark bounds them in messages, and the bytes they take
 * are counted against their half, which leaves that much less for decoded batches.
 */
public final class MemoryBudget {

  /** What the bytes are held for; each use has half the budget. */
  public enum Use {
    /** Live batches waiting to be applied, and the live sockets' unread messages. */
    LIVE,
    /** Replay windows, and the replayed history they brought until it is applied. */
    REPLAY
  }

  /** What a ZeroMQ frame costs besides its bytes (the message object and the array's header). */
  static final int FRAME_OVERHEAD = 64;

  private final long total;
  private final long half;
  private final long windowBytes;
  private final AtomicLong live = new AtomicLong();
  private final AtomicLong replay = new AtomicLong();
  private final AtomicLong peak = new AtomicLong();
  private final ReplaySlots slots;

  private MemoryBudget(long total, int replaySlots, long windowCap) {
    this.total = total;
    this.half = total / 2;
    this.windowBytes = Math.min(windowCap, half / replaySlots);
    this.slots = new ReplaySlots(replaySlots);
  }

  /**
   * A budget of {@code totalBytes}, with at most {@code replaySlots} replays at a time, each window
   * at most {@code maxWindowBytes} (and at most an equal share of the replay half).
   */
  public static MemoryBudget of(long totalBytes, int replaySlots, long maxWindowBytes) {
    Check.atLeast(totalBytes, 1 << 20, "the memory budget");
    Check.atLeast(replaySlots, 1, "the concurrent replays");
    Check.atLeast(maxWindowBytes, 1, "the replay window");
    return new MemoryBudget(totalBytes, replaySlots, maxWindowBytes);
  }

  /** The whole budget, in bytes. */
  public long total() {
    return total;
  }

  /** The most one replay window holds. */
  public long windowBytes() {
    return windowBytes;
  }

  /** Bytes held now, both uses. */
  public long used() {
    return live.get() + replay.get();
  }

  /** Bytes held now for {@code use}. */
  public long used(Use use) {
    return counter(use).get();
  }

  /** The most bytes held at any time so far. */
  public long peak() {
    return peak.get();
  }

  /** Takes {@code bytes} for {@code use} if they fit its half; false (nothing taken) if not. */
  public boolean tryTake(Use use, long bytes) {
    AtomicLong counter = counter(use);
    long now;
    do {
      now = counter.get();
      if (now + bytes > half) {
        return false;
      }
    } while (!counter.compareAndSet(now, now + bytes));
    notePeak();
    return true;
  }

  /** Takes {@code bytes} for {@code use} whether they fit or not (what is already in memory). */
  public void take(Use use, long bytes) {
    counter(use).addAndGet(bytes);
    notePeak();
  }

  /** Gives back {@code bytes} taken for {@code use}. */
  public void give(Use use, long bytes) {
    counter(use).addAndGet(-bytes);
  }

  private AtomicLong counter(Use use) {
    return use == Use.LIVE ? live : replay;
  }

  private void notePeak() {
    long now = used();
    long before;
    while (now > (before = peak.get()) && !peak.compareAndSet(before, now)) {
      // another thread moved the peak; compare again
    }
  }

  /** Streams holding a replay slot now. */
  public int replaysRunning() {
    return slots.held();
  }

  /** Streams waiting for a replay slot now. */
  public int replaysWaiting() {
    return slots.waiting();
  }

  /** Times a stream began to wait for a replay slot so far. */
  public long replayWaits() {
    return slots.waits();
  }

  /** The replay slots every stream's replays queue for. */
  ReplaySlots slots() {
    return slots;
  }

  /** A socket's receive side, counted for {@code use}. */
  Pipe pipe(Use use) {
    return new Pipe(use);
  }

  /**
   * A new replay window: it may hold {@link #windowBytes()} less {@code held} (the replayed history
   * its stream still holds from an earlier window).
   */
  Window window(long held) {
    return new Window(Math.max(0, windowBytes - held));
  }

  /**
   * What one ZeroMQ socket has received and its reader has not read yet: set as the socket's
   * allocator, it counts every frame ZeroMQ's I/O thread allocates; {@link #read} gives a frame's
   * bytes back as the reader takes it, {@link #close} whatever is left (a connection's handshake
   * command, tens of bytes, is counted until then). Thread-safe.
   */
  final class Pipe implements MsgAllocator {
    private final Use use;
    private long unread;
    private boolean closed;

    private Pipe(Use use) {
      this.use = use;
    }

    @Override
    public synchronized Msg allocate(int size) {
      if (!closed) {
        long bytes = size + (long) FRAME_OVERHEAD;
        unread += bytes;
        take(use, bytes);
      }
      return new Msg(size);
    }

    /** A frame of {@code size} bytes was read from the socket. */
    synchronized void read(int size) {
      if (!closed) {
        long bytes = Math.min(unread, size + (long) FRAME_OVERHEAD);
        unread -= bytes;
        give(use, bytes);
      }
    }

    /**
     * The socket is closed: what it held unread is gone (and what it still gets is not counted).
     */
    synchronized void close() {
      closed = true;
      give(use, unread);
      unread = 0;
    }

    /** Bytes received and not read yet. */
    synchronized long unread() {
      return unread;
    }
  }

  /**
   * The bytes one replay holds while it is read, taken for {@link Use#REPLAY} up to the window's
   * size; {@link #close} gives them back once the stream's sequencer holds what it keeps. Not
   * thread-safe: the stream's worker reads the replay.
   */
  final class Window implements AutoCloseable {
    private final long size;
    private long held;

    private Window(long size) {
      this.size = size;
    }

    /**
     * Takes {@code bytes} if the window has room for them; false (nothing taken) if not. The
     * windows of the slots' holders add up to the replay half at most, so this never asks the
     * budget whether they fit.
     */
    boolean tryTake(long bytes) {
      if (held + bytes > size) {
        return false;
      }
      take(Use.REPLAY, bytes);
      held += bytes;
      return true;
    }

    /** The most the window may hold. */
    long size() {
      return size;
    }

    /** Bytes taken so far. */
    long held() {
      return held;
    }

    @Override
    public void close() {
      give(Use.REPLAY, held);
      held = 0;
    }
  }

  /**
   * At most {@code slots} streams replay at a time; the others wait their turn, in the order they
   * first asked. Thread-safe.
   */
  static final class ReplaySlots {
    private final int slots;
    private final Set<StreamId> holders = new HashSet<>();
    private final LinkedHashSet<StreamId> waiting = new LinkedHashSet<>();
    private final LongAdder waits = new LongAdder();

    ReplaySlots(int slots) {
      this.slots = slots;
    }

    /**
     * Whether {@code stream} holds a slot now: it already did, or one is free and no stream asked
     * before it; otherwise it waits in line (counted once per wait).
     */
    synchronized boolean tryAcquire(StreamId stream) {
      if (holders.contains(stream)) {
        return true;
      }
      int free = slots - holders.size();
      int ahead = 0;
      for (StreamId w : waiting) {
        if (w.equals(stream) || ahead >= free) {
          break;
        }
        ahead++;
      }
      if (ahead < free) {
        waiting.remove(stream);
        holders.add(stream);
        return true;
      }
      if (waiting.add(stream)) {
        waits.increment();
      }
      return false;
    }

    /** {@code stream} holds no slot and waits for none. */
    synchronized void release(StreamId stream) {
      holders.remove(stream);
      waiting.remove(stream);
    }

    /** Streams holding a slot. */
    synchronized int held() {
      return holders.size();
    }

    /** Streams waiting for a slot. */
    synchronized int waiting() {
      return waiting.size();
    }

    /** Waits begun so far. */
    long waits() {
      return waits.sum();
    }
  }
}
