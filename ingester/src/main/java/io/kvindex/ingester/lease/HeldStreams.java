package io.kvindex.ingester.lease;

import io.kvindex.common.Threads;
import io.kvindex.index.Lease;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.ingester.stream.StreamWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The streams this replica holds: a worker thread for each, and where each worker stands in its
 * {@link Holding} life cycle, from its start to its exit, when its lease is released (or kept, or
 * fenced). The coordinator decides; this carries it out. Thread-safe: the coordinator's thread
 * starts and stops workers, each worker's thread reports its exit.
 */
final class HeldStreams implements StreamWorker.Listener {
  private static final Logger log = LoggerFactory.getLogger(HeldStreams.class);

  private final Shared shared;

  /** The workers held (stopping ones are not), by stream. */
  private final Map<StreamId, StreamWorker> workers = new ConcurrentHashMap<>();

  /** Each worker's thread, until the worker has exited. */
  private final Map<StreamId, Thread> threads = new ConcurrentHashMap<>();

  private final Map<StreamWorker, Holding> holding = new ConcurrentHashMap<>();

  /**
   * The engine restarts a {@link Holding#REPLACING} worker had seen when it was told to restart.
   */
  private final Map<StreamWorker, Integer> restartsBefore = new ConcurrentHashMap<>();

  private volatile boolean releaseOnExit = true;

  HeldStreams(Shared shared) {
    this.shared = shared;
  }

  /** The workers held, by stream (a live view). */
  Map<StreamId, StreamWorker> workers() {
    return workers;
  }

  /** Whether a worker for {@code s} is held or still stopping. */
  boolean present(StreamId s) {
    return workers.containsKey(s) || threads.containsKey(s);
  }

  /** Whether a worker for {@code s} was told to stop and has not exited yet. */
  boolean stopping(StreamId s) {
    return threads.containsKey(s) && !workers.containsKey(s);
  }

  /** Starts a worker for a stream whose lease was just acquired. */
  void start(StreamId s, PodSpec pod, Lease lease, boolean engineAsleep) {
    shared.metrics().leaseMoved("acquired");
    StreamWorker w = new StreamWorker(s, pod.keyMode(), pod, lease, shared, this);
    w.status().engineAsleep(engineAsleep);
    Thread t = Threads.daemon("kvindex-stream-" + s.pod() + "-dp" + s.dpRank(), w);
    holding.put(w, Holding.RUNNING);
    workers.put(s, w);
    threads.put(s, t);
    t.start();
  }

  /** Where a held worker stands ({@link Holding#RUNNING} once it has exited). */
  Holding holding(StreamWorker w) {
    return holding.getOrDefault(w, Holding.RUNNING);
  }

  /** The pod of a held worker left discovery: it is retiring. */
  void retiring(StreamWorker w) {
    move(w, Holding.Event.POD_LEFT);
  }

  /** A held worker was told its engine restarted, having seen {@code restarts} restarts. */
  void replacing(StreamWorker w, int restarts) {
    restartsBefore.put(w, restarts);
    move(w, Holding.Event.NEW_INCARNATION);
  }

  /** The restarts a replacing worker had seen when told to restart, or null if it is not one. */
  Integer restartsBefore(StreamWorker w) {
    return holding(w) == Holding.REPLACING ? restartsBefore.get(w) : null;
  }

  /** Stops a worker ({@code how}: whether its lease is released when it has exited). */
  void stop(StreamWorker w, Holding.Event how) {
    workers.remove(w.id(), w);
    move(w, how);
    w.stop();
  }

  /** Halts every worker held at once, keeping their leases (another process holds this id). */
  void haltKeepingLeases() {
    for (StreamWorker w : List.copyOf(workers.values())) {
      move(w, Holding.Event.STOP_KEEPING_LEASE);
      workers.remove(w.id(), w);
      w.halt();
    }
  }

  /** Moves a worker's life cycle on (not once it has exited). */
  private void move(StreamWorker w, Holding.Event event) {
    holding.computeIfPresent(w, (k, state) -> state.on(event));
  }

  /** The streams held that count towards the fair share. */
  int counted() {
    return (int) workers.values().stream().filter(w -> holding(w).counted()).count();
  }

  @Override
  public void exited(StreamWorker w, StreamStatus.State finalState) {
    threads.remove(w.id(), Thread.currentThread());
    workers.remove(w.id(), w);
    restartsBefore.remove(w);
    boolean keep = holding.remove(w) == Holding.STOPPING_LEASE_KEPT;
    if (!workers.containsKey(w.id())) {
      shared.metrics().forget(w.id());
    }
    if (finalState == StreamStatus.State.FENCED) {
      shared.metrics().leaseMoved("fenced");
    } else if (!keep && releaseOnExit) {
      try {
        shared.index().releaseLease(w.id(), w.lease());
        shared.metrics().leaseMoved("released");
      } catch (RuntimeException e) {
        log.warn("pod={} stream={}: lease not released ({}); it expires", w.id().pod(), w.id(), e);
      }
    }
  }

  /** Halts every worker (none writes again); leases are released unless {@code crash}. */
  void haltAll(boolean crash) {
    releaseOnExit = !crash;
    for (StreamWorker w : workers.values()) {
      w.halt();
    }
  }

  /**
   * Waits up to {@code wait} for every worker's thread to end; returns false if interrupted (the
   * interrupt flag is restored).
   */
  boolean join(Duration wait) {
    long end = System.nanoTime() + wait.toNanos();
    for (Thread t : List.copyOf(threads.values())) {
      long left = Math.max(1, (end - System.nanoTime()) / 1_000_000);
      try {
        t.join(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }
}
