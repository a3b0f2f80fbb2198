package io.kvindex.ingester;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.KvEventBatch;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.WireFormatException;
import io.kvindex.wire.ZmqFrames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZFrame;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;
import org.zeromq.ZMsg;

/**
 * Keeps one stream's entries in the index equal to what its engine holds. Runs on its own thread
 * ({@link #run()}); the public-to-the-package methods may be called from any thread.
 *
 * <p>Implementation notes. Batches are applied strictly in sequence order: live batches wait in
 * {@code pending} (ordered by sequence) until every earlier one is applied. A batch is in exactly
 * one place: pending, or applied (its sequence is then below {@code expected}, which is the index's
 * watermark + 1). A gap (the lowest pending sequence is above {@code expected}) is repaired by a
 * replay from {@code expected} through a fresh DEALER while the SUB socket keeps queueing live
 * batches; when the replay cannot cover the gap the stream is purged and restarts from the oldest
 * batch available. A live sequence below {@code expected} that is not a recent duplicate means the
 * engine restarted: purge, reset the watermark, start over from sequence 0. A batch carrying
 * AllBlocksCleared is applied as a purge followed by the events after the last clear; until both
 * complete the stream does not advance, so a temporary Redis error keeps the purge pending instead
 * of leaving a cleared pod looking warm. Temporary errors already retried by the index end here as
 * SWALLOWED: the work stays pending and is tried again after a jittered backoff. Real errors mark
 * the stream failed (visible on /readyz) and are retried at the backoff cap. A fenced write stops
 * the worker at once.
 */
final class StreamWorker implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);
  private static final int RECENT = 256;
  private static final long RECV_TIMEOUT_MS = 50;

  /** A stream's health as /readyz reports it. */
  enum State {
    STARTING,
    RUNNING,
    FAILED,
    FENCED,
    STOPPED
  }

  /** Told when a worker ends. */
  interface Listener {
    void exited(StreamWorker worker, State finalState);
  }

  /**
   * A purge to run before anything else is applied.
   *
   * @param reason the metric tag
   * @param reset whether the index forgets the watermark
   * @param continueFrom the sequence to continue from once done, or -1 to keep the current one
   */
  private record Purge(String reason, boolean reset, long continueFrom) {}

  private final StreamId id;
  private final PodSpec pod;
  private final long token;
  private final Shared shared;
  private final Listener listener;
  private final String label;
  private final TreeMap<Long, byte[]> pending = new TreeMap<>();
  private final Map<Long, Integer> recent = new LinkedHashMap<>(RECENT * 2, 0.75f, false);
  private final ConcurrentLinkedQueue<String> purgeRequests = new ConcurrentLinkedQueue<>();
  private final Backoff retry;
  private final Backoff reconnect;

  private volatile boolean running = true;
  private volatile boolean halted;
  private volatile State state = State.STARTING;
  private volatile String lastError = "";
  private volatile long applied = -1;
  private volatile long liveReceived;
  private volatile long lastAppliedNanos = System.nanoTime() - Long.MAX_VALUE / 2;
  private volatile int restarts;
  private volatile boolean restartRequested;
  private ZMQ.Socket sub;
  private long expected = -1;
  private volatile Purge purge;
  private long retryAtNanos;
  private long quietSinceNanos = System.nanoTime();

  StreamWorker(StreamId id, PodSpec pod, long token, Shared shared, Listener listener) {
    this.id = id;
    this.pod = pod;
    this.token = token;
    this.shared = shared;
    this.listener = listener;
    this.label = "pod=" + id.pod() + " stream=" + id;
    IngesterConfig c = shared.config();
    this.retry = new Backoff(c.retryMin(), c.retryMax());
    this.reconnect = new Backoff(c.reconnectMin(), c.reconnectMax());
  }

  StreamId id() {
    return id;
  }

  PodSpec pod() {
    return pod;
  }

  long token() {
    return token;
  }

  State state() {
    return state;
  }

  String lastError() {
    return lastError;
  }

  /** The last sequence this worker applied, or -1. */
  long applied() {
    return applied;
  }

  /** When this worker last applied a batch ({@link System#nanoTime()}). */
  long lastAppliedNanos() {
    return lastAppliedNanos;
  }

  /** Engine restarts this worker has handled so far. */
  int restarts() {
    return restarts;
  }

  /**
   * Tells the worker its engine restarted (a new incarnation seen on /metrics), for restarts the
   * sequence numbers cannot show: the new engine may already have passed the old watermark.
   */
  void requestRestart() {
    restartRequested = true;
  }

  /** Live messages received so far. */
  long liveReceived() {
    return liveReceived;
  }

  /** Asks for a purge of this stream (level-triggered callers may ask again until it is done). */
  void requestPurge(String reason) {
    purgeRequests.add(reason);
  }

  /** True while a purge is waiting (requested, or hit a temporary error). */
  boolean purgePending() {
    return purge != null || !purgeRequests.isEmpty();
  }

  /** Asks the worker to stop after its current step (a write in flight still happens). */
  void stop() {
    running = false;
  }

  /** Stops the worker without another write, even one it was about to make (shutdown). */
  void halt() {
    halted = true;
    running = false;
  }

  @Override
  public void run() {
    try {
      while (running) {
        try {
          step();
        } catch (FencedException e) {
          fenced();
          break;
        } catch (RuntimeException e) {
          failed(e);
        }
      }
    } finally {
      closeSocket();
      if (state != State.FENCED) {
        state = State.STOPPED;
      }
      listener.exited(this, state);
    }
  }

  private void step() {
    if (sub == null && !openSocket()) {
      return;
    }
    if (expected < 0 && !loadWatermark()) {
      return;
    }
    if (restartRequested) {
      restartRequested = false;
      engineRestarted(-1, "its process start time changed");
    }
    takePurgeRequests();
    if (System.nanoTime() - retryAtNanos >= 0) {
      progress();
    }
    ZMsg msg = ZMsg.recvMsg(sub);
    if (msg != null) {
      quietSinceNanos = System.nanoTime();
      liveReceived++;
      onLive(msg);
    } else if (System.nanoTime() - quietSinceNanos > shared.config().idleCatchUp().toNanos()) {
      quietSinceNanos = System.nanoTime();
      catchUp();
    }
  }

  /** A quiet stream asks for anything after its watermark that it may have missed. */
  private void catchUp() {
    String endpoint = pod.replayEndpoint(id.dpRank());
    if (endpoint == null || purge != null || !pending.isEmpty()) {
      return;
    }
    Replay.Result r =
        Replay.fetch(shared.zmq(), endpoint, expected, shared.config().replayIdleTimeout());
    if (!r.batches().isEmpty()) {
      log.info("{}: quiet stream caught up {} batches from replay", label, r.batches().size());
      shared.metrics().replay("idle_catch_up");
      r.batches().forEach(f -> pending.putIfAbsent(f.seq(), f.payload()));
      progress();
    }
  }

  private boolean openSocket() {
    String endpoint = pod.publisherEndpoint(id.dpRank());
    ZMQ.Socket s = shared.zmq().createSocket(SocketType.SUB);
    try {
      s.setLinger(0);
      s.setRcvHWM(shared.config().maxPendingBatches());
      s.setReceiveTimeOut((int) RECV_TIMEOUT_MS);
      long min = shared.config().reconnectMin().toMillis();
      s.setReconnectIVL(min + ThreadLocalRandom.current().nextLong(min + 1));
      s.setReconnectIVLMax(shared.config().reconnectMax().toMillis());
      s.subscribe(pod.topic().getBytes(StandardCharsets.UTF_8));
      if (pod.bind()) {
        s.bind(endpoint);
      } else {
        s.connect(endpoint);
      }
      sub = s;
      reconnect.reset();
      return true;
    } catch (ZMQException | IllegalArgumentException e) {
      s.close();
      shared.metrics().reconnect();
      Duration wait = reconnect.next();
      log.warn("{}: cannot open {} ({}), retrying in {} ms", label, endpoint, e, wait.toMillis());
      park(wait);
      return false;
    }
  }

  private boolean loadWatermark() {
    try {
      expected = shared.index().watermark(id) + 1;
      applied = expected - 1;
      shared.metrics().watermark(id, applied);
      state = State.RUNNING;
      log.info("{}: owned with token {}, resuming after sequence {}", label, token, applied);
      return true;
    } catch (IndexPort.UnavailableException e) {
      shared.metrics().swallowed("watermark");
      park(retry.next());
      return false;
    }
  }

  private void takePurgeRequests() {
    String reason;
    while ((reason = purgeRequests.peek()) != null) {
      if (purge == null) {
        purge = new Purge(reason, false, -1);
      }
      purgeRequests.poll();
      retryAtNanos = System.nanoTime();
    }
  }

  private void onLive(ZMsg msg) {
    Replay.Frame frame = liveFrame(msg);
    if (frame == null) {
      shared.metrics().malformed();
      log.warn("{}: skipped a live message that is not [topic, seq8, payload]", label);
      return;
    }
    long seq = frame.seq();
    if (seq < expected) {
      Integer seen = recent.get(seq);
      if (seen != null && seen == Arrays.hashCode(frame.payload())) {
        shared.metrics().duplicateLive();
        return;
      }
      engineRestarted(seq, "live sequence " + seq + " is below the watermark " + (expected - 1));
    } else if (pending.size() >= shared.config().maxPendingBatches()) {
      return; // the gap this leaves is replayed later
    }
    pending.putIfAbsent(seq, frame.payload());
    if (System.nanoTime() - retryAtNanos >= 0) {
      progress();
    }
  }

  private static Replay.Frame liveFrame(ZMsg msg) {
    byte[][] frames = new byte[msg.size()][];
    int i = 0;
    for (ZFrame f : msg) {
      frames[i++] = f.getData();
    }
    try {
      EventMessage m = ZmqFrames.parseLive(frames);
      return new Replay.Frame(m.seq(), m.payload());
    } catch (WireFormatException e) {
      return null;
    }
  }

  private void engineRestarted(long seq, String evidence) {
    log.warn("{}: engine restarted ({}); purging", label, evidence);
    restarts++;
    shared.metrics().restart();
    pending.clear();
    recent.clear();
    purge = new Purge("engine_restart", true, 0);
    retryAtNanos = System.nanoTime();
  }

  /** Applies whatever can be applied now, in order; stops at the first thing that must wait. */
  private void progress() {
    if (purge != null && !runPurge()) {
      return;
    }
    while (running && !pending.isEmpty()) {
      long first = pending.firstKey();
      if (first < expected) {
        pending.pollFirstEntry();
      } else if (first > expected) {
        if (!repairGap(first)) {
          return;
        }
      } else if (!applyNext(first, pending.pollFirstEntry().getValue())) {
        return;
      }
    }
  }

  private boolean runPurge() {
    shared.gate().passUninterruptibly();
    if (halted) {
      return false;
    }
    IndexPort.Purged outcome = shared.index().purge(id, token, purge.reset());
    switch (outcome) {
      case DONE:
        shared.metrics().purge(purge.reason(), "done");
        log.info("{}: purged ({})", label, purge.reason());
        if (purge.reset()) {
          applied = -1;
          shared.metrics().watermark(id, applied);
        }
        if (purge.continueFrom() >= 0) {
          expected = purge.continueFrom();
        }
        purge = null;
        succeeded();
        return true;
      case FENCED:
        throw new FencedException();
      default:
        shared.metrics().purge(purge.reason(), "pending");
        shared.metrics().swallowed("purge");
        log.warn("{}: purge ({}) met a temporary error; it stays pending", label, purge.reason());
        backOff();
        return false;
    }
  }

  private boolean applyNext(long seq, byte[] payload) {
    KvEventBatch batch = decode(seq, payload);
    boolean clears = batch.events().stream().anyMatch(e -> e instanceof AllBlocksCleared);
    shared.gate().passUninterruptibly();
    if (halted) {
      pending.put(seq, payload);
      return false;
    }
    IndexPort.Applied outcome;
    try {
      outcome = shared.index().apply(id, seq, token, batch);
    } catch (RuntimeException e) {
      pending.put(seq, payload);
      throw e;
    }
    shared.metrics().batch(outcome.name().toLowerCase(Locale.ROOT));
    if (clears && outcome == IndexPort.Applied.APPLIED) {
      shared.metrics().purge("all_blocks_cleared", "done");
      log.info("{}: AllBlocksCleared in batch {}: purged", label, seq);
    } else if (clears && outcome == IndexPort.Applied.DUPLICATE) {
      log.info("{}: AllBlocksCleared in batch {} was already applied", label, seq);
    } else if (clears && outcome == IndexPort.Applied.SWALLOWED) {
      shared.metrics().purge("all_blocks_cleared", "pending");
      log.warn("{}: AllBlocksCleared in batch {} met a temporary error; pending", label, seq);
    }
    switch (outcome) {
      case APPLIED:
        advance(seq, payload);
        shared.metrics().applied(batch, shared.clock().millis());
        succeeded();
        return true;
      case DUPLICATE:
        resync();
        if (expected > seq) {
          // applied already, by an attempt whose reply was lost (or by a former owner)
          if (clears) {
            shared.metrics().purge("all_blocks_cleared", "done");
          }
          return true;
        }
        pending.put(seq, payload);
        return true;
      case GAP:
        pending.put(seq, payload);
        resync();
        return true;
      case FENCED:
        throw new FencedException();
      default:
        pending.put(seq, payload);
        shared.metrics().swallowed("apply");
        backOff();
        return false;
    }
  }

  private KvEventBatch decode(long seq, byte[] payload) {
    try {
      return shared.decoder().decode(payload);
    } catch (RuntimeException e) {
      shared.metrics().malformed();
      log.warn("{}: batch {} is malformed, skipped: {}", label, seq, e.getMessage());
      return KvEventBatch.of(0, List.of(), id.dpRank());
    }
  }

  private void advance(long seq, byte[] payload) {
    lastAppliedNanos = System.nanoTime();
    expected = seq + 1;
    applied = seq;
    recent.put(seq, Arrays.hashCode(payload));
    if (recent.size() > RECENT) {
      recent.remove(recent.keySet().iterator().next());
    }
    shared.metrics().watermark(id, seq);
  }

  /** The index disagrees with our view of the watermark: take the index's. */
  private void resync() {
    try {
      long before = expected;
      expected = shared.index().watermark(id) + 1;
      applied = expected - 1;
      log.info("{}: watermark resynchronised from {} to {}", label, before - 1, applied);
    } catch (IndexPort.UnavailableException e) {
      shared.metrics().swallowed("watermark");
      backOff();
    }
  }

  private boolean repairGap(long firstLive) {
    shared.metrics().gap();
    String endpoint = pod.replayEndpoint(id.dpRank());
    if (endpoint == null) {
      return restartFrom(firstLive, "absent", "gap_no_replay");
    }
    log.info("{}: gap {}..{}, replaying from {}", label, expected, firstLive - 1, expected);
    Replay.Result r =
        Replay.fetch(shared.zmq(), endpoint, expected, shared.config().replayIdleTimeout());
    if (r.batches().isEmpty()) {
      return restartFrom(firstLive, r.ended() ? "empty" : "silent", "gap_replay_failed");
    }
    for (Replay.Frame f : r.batches()) {
      if (f.seq() >= expected) {
        pending.putIfAbsent(f.seq(), f.payload());
      }
    }
    long first = pending.firstKey();
    if (first > expected) {
      return restartFrom(first, "beyond_ring", "gap_beyond_ring");
    }
    shared.metrics().replay(r.ended() ? "covered" : "partial");
    return true;
  }

  /**
   * Continue from {@code seq}: what happened before it is lost, so the stream is purged first
   * (unless nothing was ever applied to it).
   */
  private boolean restartFrom(long seq, String replayOutcome, String reason) {
    shared.metrics().replay(replayOutcome);
    if (applied < 0) {
      log.info("{}: new stream; starting at sequence {} ({})", label, seq, replayOutcome);
      expected = seq;
      return true;
    }
    log.warn(
        "{}: replay {} cannot cover {}..{}; purging and continuing from {}",
        label,
        replayOutcome,
        expected,
        seq - 1,
        seq);
    purge = new Purge(reason, true, seq);
    return runPurge();
  }

  private void succeeded() {
    retry.reset();
    if (state != State.RUNNING) {
      state = State.RUNNING;
      lastError = "";
    }
  }

  private void backOff() {
    retryAtNanos = System.nanoTime() + retry.next().toNanos();
  }

  private void failed(RuntimeException e) {
    shared.metrics().realError("stream");
    if (state != State.FAILED || !e.toString().equals(lastError)) {
      log.error("{}: real error; the stream is marked failed and retried later", label, e);
    } else {
      log.debug("{}: still failing: {}", label, e.toString());
    }
    state = State.FAILED;
    lastError = e.toString();
    park(shared.config().retryMax());
  }

  private void fenced() {
    state = State.FENCED;
    shared.metrics().fenced();
    log.warn("{}: fenced: another replica owns this stream now; stopping", label);
  }

  private void closeSocket() {
    if (sub != null) {
      sub.close();
      sub = null;
    }
  }

  private void park(Duration d) {
    long end = System.nanoTime() + d.toNanos();
    while (running && System.nanoTime() - end < 0) {
      LockSupport.parkNanos(Math.min(end - System.nanoTime(), 50_000_000L));
    }
  }

  /** A write was refused because a newer owner holds the lease. */
  static final class FencedException extends RuntimeException {
    FencedException() {
      super("fenced", null, false, false);
    }
  }
}
