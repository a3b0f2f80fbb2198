package io.kvindex.ingester.stream;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.Action.Apply;
import io.kvindex.ingester.stream.Action.Publish;
import io.kvindex.ingester.stream.Action.RepairGap;
import io.kvindex.ingester.stream.Action.RunPurge;
import io.kvindex.ingester.stream.StreamStatus.State;
import io.kvindex.ingester.stream.Timers.Due;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZMQException;

/**
 * Keeps one stream's entries in the index equal to what its engine holds: the shell around a {@link
 * Sequencer} that owns the stream's SUB socket, its replay fetches, its Redis calls, its metrics
 * and its logs. Runs on its own thread ({@link #run()}); the other methods may be called from any
 * thread.
 *
 * <p>Implementation notes. Each step receives what arrived (decoded once into a {@link Batch}),
 * hands it to the sequencer and carries out the sequencer's actions until it must wait. Temporary
 * errors already retried by the index end here as SWALLOWED: the work stays with the sequencer and
 * is tried again after a jittered backoff, measured on the injected ticker. Real errors mark the
 * stream failed (visible on /readyz) and are retried at the backoff cap. A fenced write stops the
 * worker at once. Purges asked for by other threads (the coordinator, the reconciler) queue up and
 * reach the sequencer at the start of a step.
 *
 * <p>What each part does. {@link BatchIntake} decodes what arrives; {@link Restarts} takes what
 * makes the stream purge and start again; {@link ReplaySlot}, {@link CatchUp} and {@link
 * GapRepairs} read the engine's replay ring; {@link IndexWrites} makes the index calls; {@link
 * Inference} infers evictions an engine does not publish; {@link LagReports} reports the stream's
 * lag; {@link Timers} holds every due time.
 *
 * <p>Memory. What the stream holds counts in the process's {@link MemoryBudget}: its socket's
 * unread messages, the live batches waiting in its sequencer, and history (read under a replay
 * slot, while the live socket is read on). Between the apply calls of a backlog the worker reads
 * what waits in its socket, so that unread messages stay few.
 */
public final class StreamWorker implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  /** Told when a worker ends. */
  public interface Listener {
    void exited(StreamWorker worker, StreamStatus.State finalState);
  }

  private final StreamId id;
  private final PodSpec pod;
  private final Lease lease;
  private final Shared shared;
  private final Listener listener;
  private final Sequencer sequencer;
  private final IndexWrites writes;
  private final StreamStatus status;
  private final Backoff retry;
  private final Backoff reconnect;
  private final String label;

  /**
   * Whether the worker goes on, as other threads move it: {@code RUNNING}; {@code STOPPING} after
   * its current step (a write in flight still happens); {@code HALTED} without another write. A
   * halt is final: a later stop leaves it halted.
   */
  private enum Run {
    RUNNING,
    STOPPING,
    HALTED
  }

  private final AtomicReference<Run> run = new AtomicReference<>(Run.RUNNING);
  private State state = State.STARTING;
  private LiveSocket sub;
  private final Timers timers;
  private final Inference inference;
  private final StreamLag lag;
  private final BatchIntake intake;
  private final ReplaySlot slot;
  private final CatchUp catchUp;
  private final GapRepairs gaps;
  private final Restarts restarts;
  private final LagReports lagReports;

  public StreamWorker(
      StreamId id, KeyMode mode, PodSpec pod, Lease lease, Shared shared, Listener listener) {
    this.id = id;
    this.pod = pod;
    this.lease = lease;
    this.shared = shared;
    this.listener = listener;
    this.sequencer =
        new Sequencer(
            shared.config().maxPendingBatches(),
            shared.config().memoryBounds().pendingBytes(),
            mode,
            shared.index().applyChunkBlocks(),
            shared.memory());
    this.retry = new Backoff(shared.config().retryMin(), shared.config().retryMax());
    this.reconnect = new Backoff(shared.config().reconnectMin(), shared.config().reconnectMax());
    this.label = "pod=" + id.pod() + " stream=" + id;
    this.writes = new IndexWrites(shared, id, mode, lease, label);
    this.lag = new StreamLag(shared.config().inferenceLagLimit(), () -> shared.clock().millis());
    this.status = new StreamStatus(shared.nanos());
    this.timers = new Timers(shared::nanos);
    this.intake = new BatchIntake(shared, id, mode, label, sequencer);
    this.slot = new ReplaySlot(shared, id, mode, pod, sequencer, status, intake);
    this.catchUp =
        new CatchUp(
            shared,
            sequencer,
            status,
            slot,
            label,
            this::anotherEngine,
            this::progress,
            this::closeSocket);
    this.gaps =
        new GapRepairs(shared, sequencer, slot, catchUp, label, this::anotherEngine, this::backOff);
    this.lagReports = new LagReports(shared, id, sequencer, lag, timers, label);
    this.inference =
        new Inference(
            shared,
            id,
            mode,
            pod,
            label,
            status,
            sequencer,
            lag,
            timers,
            model -> slot.prime(model, this::running, this::park));
    this.restarts = new Restarts(shared, sequencer, status, timers, catchUp, inference, label);
  }

  public StreamId id() {
    return id;
  }

  public PodSpec pod() {
    return pod;
  }

  public Lease lease() {
    return lease;
  }

  /** What other threads see of the stream, and may ask of it. */
  public StreamStatus status() {
    return status;
  }

  /** Asks the worker to stop after its current step (a write in flight still happens). */
  public void stop() {
    run.compareAndSet(Run.RUNNING, Run.STOPPING);
  }

  /** Stops the worker without another write, even one it was about to make (shutdown). */
  public void halt() {
    run.set(Run.HALTED);
  }

  @Override
  public void run() {
    try {
      while (running()) {
        try {
          slot.stepStarted();
          step();
          slot.stepEnded();
        } catch (IndexWrites.FencedException e) {
          fenced();
          break;
        } catch (RuntimeException e) {
          failed(e);
        }
      }
    } finally {
      slot.release();
      sequencer.release();
      inference.exit(!halted() && state != State.FENCED); // a next owner goes on from its model
      closeSocket();
      if (state != State.FENCED) {
        setState(State.STOPPED, status.lastError());
      }
      listener.exited(this, state);
    }
  }

  private void step() {
    status.observed(shared.nanos(), sub != null && sub.connected());
    if (sub == null && !openSocket()) {
      return;
    }
    if (!sequencer.started() && !loadWatermark()) {
      return;
    }
    restarts.takeRequests();
    inference.markAndReadIfDue();
    lagReports.reportIfDue();
    progressIfDue();
    inference.handOverIfDue();
    if (sub.reconnected()) {
      slot.on(Owed.Event.RECONNECTED);
    }
    if (slot.owed().reconnectCheck()) {
      catchUp.run(true); // before anything more is applied
    }
    if (slot.owed().history() && sequencer.mayCatchUp()) {
      catchUp.run(false); // the next window of a history, whether or not live batches arrive
      if (sub == null) {
        return; // the catch-up found the live socket deaf and closed it: the next step reopens it
      }
    }
    LiveSocket.Received received = sub.receive();
    if (received instanceof LiveSocket.Nothing) {
      catchUp.ifQuiet();
      return;
    }
    if (received instanceof LiveSocket.Message && slot.owed().reconnectCheckBeforeLive()) {
      catchUp.run(true); // the ring now holds everything published before this batch
    }
    // What else waits in the socket is read before anything is applied: a stream behind its
    // engine then applies its backlog several batches per call. A purge (an engine restart seen)
    // runs before more is read.
    take(received);
    readWaiting();
    progressIfDue();
  }

  private void take(LiveSocket.Received received) {
    if (received instanceof LiveSocket.Message m) {
      long now = shared.nanos();
      catchUp.heard(now);
      status.aliveAt(now);
      status.received();
      Batch batch = intake.decoded(m.message(), true);
      lag.received(batch.events(), now);
      onLive(batch);
    } else if (received instanceof LiveSocket.Garbled g) {
      status.received();
      shared.metrics().malformed();
      log.warn("{}: skipped a live message that is not [topic, seq8, payload]: {}", label, g.why());
    }
  }

  private void progressIfDue() {
    if (timers.due(Due.RETRY)) {
      progress();
    }
  }

  private boolean openSocket() {
    try {
      sub = LiveSocket.open(shared, shared.memory(), pod, id.dpRank());
      reconnect.reset();
      return true;
    } catch (ZMQException | IllegalArgumentException e) {
      shared.metrics().reconnect();
      Duration wait = reconnect.next();
      String endpoint = pod.publisherEndpoint(id.dpRank());
      log.warn("{}: cannot open {} ({}), retrying in {} ms", label, endpoint, e, wait.toMillis());
      park(wait);
      return false;
    }
  }

  private boolean loadWatermark() {
    try {
      long watermark = shared.index().watermark(id).orElse(-1);
      sequencer.start(watermark, watermark >= 0 && shared.index().staged(id));
      status.progress(sequencer);
      if (sequencer.applied() >= 0) {
        catchUp.soon(); // taken over from another owner: what it missed is in the replay ring
      }
      shared.metrics().watermark(id, sequencer.applied());
      setState(State.RUNNING, "");
      log.info(
          "{}: owned with lease {}, resuming after sequence {}", label, lease, sequencer.applied());
      inference.resume();
      return true;
    } catch (RedisUnavailableException e) {
      shared.metrics().swallowed(Operation.WATERMARK);
      park(retry.next());
      return false;
    }
  }

  private void onLive(Batch batch) {
    switch (sequencer.live(batch)) {
      case DUPLICATE -> shared.metrics().duplicateLive();
      case RESTART ->
          restarts.restarted(
              "live sequence " + batch.seq() + " is below the watermark " + sequencer.applied());
      case DROPPED -> intake.dropped(batch, "stream_bound");
      case OVER_BUDGET -> intake.dropped(batch, "memory_budget");
      case QUEUED -> {
        // applied by the step, in order
      }
    }
  }

  /** Carries out the sequencer's actions until it has nothing to do or something must wait. */
  private void progress() {
    while (running()) {
      Action action = sequencer.next();
      boolean goOn;
      if (action instanceof RunPurge p) {
        goOn = runPurge(p);
      } else if (action instanceof Apply a) {
        goOn = apply(a);
      } else if (action instanceof Publish) {
        // Live batches still unread in the socket are part of catching up: read them first (the
        // next steps do), or the slot is shown as stale as the replay took long.
        shared.faults().beforeWriteUninterruptibly();
        goOn = !halted() && (sub == null || !sub.waiting()) && carryOut(writes.publish(sequencer));
      } else if (action instanceof RepairGap g) {
        goOn = gaps.repair(g);
      } else {
        goOn = false;
      }
      status.progress(sequencer);
      if (!goOn) {
        return;
      }
      readWaiting();
    }
  }

  /**
   * Reads what waits in the live socket between the calls of a backlog: read, it counts against the
   * stream's bounds and the budget (dropped past them), where unread it would only pile up.
   */
  private void readWaiting() {
    for (int more = 0;
        more < ApplyMerger.MAX_PARTS && sub != null && !sequencer.purgePending() && sub.waiting();
        more++) {
      take(sub.receive());
    }
  }

  private boolean runPurge(RunPurge action) {
    shared.faults().beforeWriteUninterruptibly();
    return !halted() && carryOut(writes.purge(sequencer, action, inference.model()));
  }

  private boolean apply(Apply action) {
    inference.beforeApply();
    shared.faults().beforeWriteUninterruptibly();
    long appliedBefore = status.lastAppliedNanos();
    boolean goOn =
        !halted() && carryOut(writes.apply(sequencer, action, status, inference.model()));
    if (status.lastAppliedNanos() != appliedBefore) {
      inference.applied(action);
    }
    return goOn;
  }

  /** Whether the stream goes on after a write. */
  private boolean carryOut(IndexWrites.Outcome outcome) {
    switch (outcome) {
      case DONE -> {
        succeeded();
        return true;
      }
      case LOST -> {
        // The index's listeners heard of this reset before the write's caller did, and asked this
        // stream to start again too: one reset, one purge and one replay.
        status.takeIndexResetRequest();
        restarts.indexLost();
        return true;
      }
      default -> {
        backOff();
        return false;
      }
    }
  }

  private void succeeded() {
    retry.reset();
    if (state != State.RUNNING) {
      if (state == State.FAILED) {
        log.info("{}: writes succeed again; the stream is running", label);
      }
      setState(State.RUNNING, "");
    }
  }

  private void setState(State state, String lastError) {
    this.state = state;
    status.state(state, lastError);
  }

  private void backOff() {
    timers.in(Due.RETRY, retry.next());
  }

  private void failed(RuntimeException e) {
    shared.metrics().realError(Operation.STREAM);
    if (state != State.FAILED || !e.toString().equals(status.lastError())) {
      log.error("{}: real error; the stream is marked failed and retried later", label, e);
    } else {
      log.debug("{}: still failing: {}", label, e.toString());
    }
    setState(State.FAILED, e.toString());
    park(shared.config().retryMax());
  }

  private void fenced() {
    setState(State.FENCED, "");
    shared.metrics().fenced();
    log.warn("{}: fenced: another replica owns this stream now; stopping", label);
  }

  private boolean running() {
    return run.get() == Run.RUNNING;
  }

  private boolean halted() {
    return run.get() == Run.HALTED;
  }

  private void anotherEngine(List<Batch> replayed) {
    restarts.anotherEngine(replayed);
  }

  private void closeSocket() {
    if (sub != null) {
      sub.close();
      sub = null;
    }
  }

  private void park(Duration d) {
    long end = shared.nanos() + d.toNanos();
    while (running() && shared.nanos() - end < 0) {
      LockSupport.parkNanos(Math.min(end - shared.nanos(), 50_000_000L));
    }
  }
}
