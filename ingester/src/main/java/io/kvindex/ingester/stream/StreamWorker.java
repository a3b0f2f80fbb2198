package io.kvindex.ingester.stream;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.Sequencer.Action;
import io.kvindex.ingester.stream.Sequencer.Apply;
import io.kvindex.ingester.stream.Sequencer.GapRepair;
import io.kvindex.ingester.stream.Sequencer.Publish;
import io.kvindex.ingester.stream.Sequencer.RepairGap;
import io.kvindex.ingester.stream.Sequencer.RunPurge;
import io.kvindex.ingester.stream.StreamStatus.State;
import io.kvindex.ingester.stream.Timers.Due;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
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
 * <p>Inferred evictions. A router that finds the pod over-predicted asks for a resync: purge, then
 * apply again what the replay ring covers. That cannot help an engine that evicts without
 * publishing (the ring lacks the evictions too), and it drops the pod's hottest prefixes (a prefix
 * hit publishes nothing, so they predate the ring). So when the engine reports its KV-cache
 * capacity (engine keys only) the stream starts an {@link EvictionModel} instead: primed from the
 * ring without purging anything, fed every later batch, it removes what it evicts with the next
 * apply; the pod is marked in the index so that routers send the blocks of the requests they
 * observe (touches), which the worker reads before its applies (at most every {@link
 * Inference#TOUCH_READ_BEFORE_APPLY}) and every {@link Inference#TOUCH_READ_INTERVAL} while idle. A
 * new owner of a marked pod's stream starts the same way, from what the former owner left in the
 * index (its model's size and the removals it had decided and not applied, refreshed every {@link
 * Inference#HANDOVER_EVERY} when they changed). Purges clear the model with the index's entries.
 * Inference lasts as long as the worker, unless the stream cannot keep up with it: applied at least
 * {@code --inference-lag-limit} late through as long a stretch of its engine's time, it says so,
 * stops inferring and does not infer again for {@link Inference#INFERENCE_HOLD_OFF}.
 *
 * <p>Lag. Every {@link #LAG_REPORT_EVERY} the worker reports in the index how far behind its engine
 * it is ({@link StreamLag}), so that routers do not take an error its lag explains for drift; a
 * worker stuck in a call reports nothing, which routers read as behind too.
 *
 * <p>Memory. What the stream holds counts in the process's {@link MemoryBudget}: its socket's
 * unread messages, the live batches waiting in its sequencer, and history. A replay (a gap's
 * repair, a catch-up, a model's priming) is read only while the stream holds one of the budget's
 * replay slots, and into one window of it: a longer history is read window by window, each applied
 * before the next is asked for, and the slot is kept until the history is in. A stream that waits
 * for a slot goes on reading its live socket and asks again at its next step. Between the apply
 * calls of a backlog the worker reads what waits in its socket, so that unread messages stay few.
 */
public final class StreamWorker implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

  /** Told when a worker ends. */
  public interface Listener {
    void exited(StreamWorker worker, StreamStatus.State finalState);
  }

  private final StreamId id;
  private final KeyMode mode;
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

  /** How long a priming that waits for a replay slot sleeps before it asks again. */
  static final Duration SLOT_WAIT = Duration.ofMillis(50);

  /** How often the stream reports its lag in the index, and how long a report stands there. */
  static final Duration LAG_REPORT_EVERY = Duration.ofSeconds(1);

  static final Duration LAG_REPORT_TTL = Duration.ofMinutes(1);

  private volatile boolean running = true;
  private volatile boolean halted;
  private State state = State.STARTING;
  private LiveSocket sub;
  private boolean lastReportedAsleep;
  private long liveAtLastCatchUp = -1;
  private long quietSinceNanos;
  private final Timers timers;
  private final Inference inference;
  private final StreamLag lag;

  private final MemoryBudget memory;

  /** A replay stopped at its window: the rest of the history is still to be read. */
  private boolean historyOwed;

  /** This step asked for a replay slot and was told to wait. */
  private boolean wantedReplay;

  /** The live socket reconnected and the ring's copy of the last applied batch is still to see. */
  private boolean reconnectCheckOwed;

  private final BatchIntake intake;

  public StreamWorker(
      StreamId id, KeyMode mode, PodSpec pod, Lease lease, Shared shared, Listener listener) {
    this.id = id;
    this.mode = mode;
    this.pod = pod;
    this.lease = lease;
    this.shared = shared;
    this.listener = listener;
    this.memory = shared.memory();
    this.sequencer =
        new Sequencer(
            shared.config().maxPendingBatches(),
            shared.config().memoryBounds().pendingBytes(),
            mode,
            shared.index().applyChunkBlocks(),
            memory);
    this.retry = new Backoff(shared.config().retryMin(), shared.config().retryMax());
    this.reconnect = new Backoff(shared.config().reconnectMin(), shared.config().reconnectMax());
    this.label = "pod=" + id.pod() + " stream=" + id;
    this.writes = new IndexWrites(shared, id, mode, lease, label);
    this.lag = new StreamLag(shared.config().inferenceLagLimit(), () -> shared.clock().millis());
    long now = shared.nanos();
    this.status = new StreamStatus(now);
    this.quietSinceNanos = now;
    this.timers = new Timers(shared::nanos);
    this.intake = new BatchIntake(shared, id, mode, label, sequencer);
    this.inference =
        new Inference(shared, id, mode, pod, label, status, sequencer, lag, timers, this::prime);
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
    running = false;
  }

  /** Stops the worker without another write, even one it was about to make (shutdown). */
  public void halt() {
    halted = true;
    running = false;
  }

  @Override
  public void run() {
    try {
      while (running) {
        try {
          wantedReplay = false;
          step();
          settleReplaySlot();
        } catch (IndexWrites.FencedException e) {
          fenced();
          break;
        } catch (RuntimeException e) {
          failed(e);
        }
      }
    } finally {
      memory.slots().release(id);
      sequencer.release();
      inference.exit(!halted && state != State.FENCED); // a next owner goes on from its model
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
    takeRequests();
    inference.markAndReadIfDue();
    reportLagIfDue();
    progressIfDue();
    inference.handOverIfDue();
    if (sub.reconnected()) {
      reconnectCheckOwed = true;
    }
    if (reconnectCheckOwed) {
      // Maybe another process on the same endpoint, whose first batches were never heard: before
      // anything more is applied, compare the ring's copy of the last applied batch.
      catchUp(true);
    }
    if (historyOwed && sequencer.mayCatchUp()) {
      catchUp(false); // the next window of a history, whether or not live batches arrive
      if (sub == null) {
        return; // the catch-up found the live socket deaf and closed it: the next step reopens it
      }
    }
    LiveSocket.Received received = sub.receive();
    if (received instanceof LiveSocket.Nothing) {
      if (shared.nanos() - quietSinceNanos > shared.config().idleCatchUp().toNanos()) {
        quietSinceNanos = shared.nanos();
        catchUp(false);
      }
      return;
    }
    // What else waits in the socket is read before anything is applied: a stream behind its
    // engine then applies its backlog several batches per call. A purge (an engine restart seen)
    // runs before more is read.
    take(received);
    for (int more = 0;
        more < Sequencer.MAX_PARTS && !sequencer.purgePending() && sub.waiting();
        more++) {
      take(sub.receive());
    }
    progressIfDue();
  }

  private void take(LiveSocket.Received received) {
    if (received instanceof LiveSocket.Message m) {
      quietSinceNanos = shared.nanos();
      status.aliveAt(quietSinceNanos);
      status.received();
      Batch batch = intake.decoded(m.message(), true);
      lag.received(batch.events(), quietSinceNanos);
      onLive(batch);
    } else if (received instanceof LiveSocket.Garbled g) {
      status.received();
      shared.metrics().malformed();
      log.warn("{}: skipped a live message that is not [topic, seq8, payload]: {}", label, g.why());
    }
  }

  private void takeRequests() {
    if (status.takeRestartRequest()) {
      engineRestarted("its process start time changed");
    }
    if (status.takeIndexResetRequest()) {
      indexLost();
    }
    String resync = status.takeResyncRequest();
    if (resync != null) {
      resync(resync);
    }
    boolean reportedAsleep = status.engineAsleep();
    if (reportedAsleep != lastReportedAsleep) {
      // Edges of what the scrapes say: a live batch may show the engine awake before a scrape does.
      lastReportedAsleep = reportedAsleep;
      sequencer.asleep(reportedAsleep);
      if (reportedAsleep) {
        log.info(
            "{}: the engine sleeps; purging, and nothing from before the sleep applies", label);
        timers.now(Due.RETRY);
      }
    }
    String reason;
    while ((reason = status.nextPurgeRequest()) != null) {
      sequencer.requestPurge(reason);
      // The purge shows as pending before its request leaves the queue: the coordinator releases
      // a departed pod's lease only once neither holds it.
      status.progress(sequencer);
      status.dropPurgeRequest();
      timers.now(Due.RETRY);
    }
    status.progress(sequencer);
  }

  private void progressIfDue() {
    if (timers.due(Due.RETRY)) {
      progress();
    }
  }

  private boolean openSocket() {
    try {
      sub = LiveSocket.open(shared, memory, pod, id.dpRank());
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
        // Taken over from another owner: what the engine published since, or removed while its
        // stream was quiet, is in the replay ring; ask for it now, not after a quiet spell.
        quietSinceNanos = shared.nanos() - shared.config().idleCatchUp().toNanos() - 1;
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
          restarted(
              "live sequence " + batch.seq() + " is below the watermark " + sequencer.applied());
      case DROPPED -> intake.dropped(batch, "stream_bound");
      case OVER_BUDGET -> intake.dropped(batch, "memory_budget");
      case QUEUED -> {
        // applied by the step, in order
      }
    }
  }

  /** The ring holds another payload under a sequence this stream applied: a new process. */
  private void anotherEngine(List<Batch> replayed) {
    engineRestarted(
        "its replay ring's batch "
            + replayed.get(0).seq()
            + " is not the one applied, so a new process published it");
  }

  private void engineRestarted(String evidence) {
    sequencer.restart();
    restarted(evidence);
  }

  private void restarted(String evidence) {
    log.warn("{}: engine restarted ({}); purging", label, evidence);
    status.progress(sequencer);
    shared.metrics().restart();
    timers.now(Due.RETRY);
    askTheRingSoon();
  }

  /**
   * Once the purge is done, a quiet stream asks its ring at once rather than after a quiet spell:
   * the new history is there, and an engine that went quiet would otherwise look cold for {@code
   * --idle-catch-up}.
   */
  private void askTheRingSoon() {
    quietSinceNanos = shared.nanos() - shared.config().idleCatchUp().toNanos() - 1;
  }

  private void indexLost() {
    log.warn(
        "{}: the index lost what it held of this stream; starting again from the replay", label);
    sequencer.indexLost();
    status.progress(sequencer);
    timers.now(Due.RETRY);
    askTheRingSoon();
  }

  private void resync(String note) {
    if (inference.resync(note)) {
      return;
    }
    log.warn(
        "{}: resyncing on a router's request ({}): purging, then replaying what the ring covers;"
            + " evictions are not inferred: {}",
        label,
        note,
        inference.whyNot());
    sequencer.resync();
    status.progress(sequencer);
    timers.now(Due.RETRY);
    askTheRingSoon();
  }

  /**
   * Primes the model from the engine's ring, up to the watermark (what the index applied); returns
   * the batches taken in. No ring, or one too large to fetch, leaves the model empty.
   */
  private int prime(EvictionModel model) {
    String endpoint = pod.replayEndpoint(id.dpRank());
    long through = sequencer.applied();
    if (endpoint == null || through < 0) {
      return 0;
    }
    int primed = 0;
    long from = 0;
    while (running) {
      if (!replaySlot()) {
        park(SLOT_WAIT);
        continue;
      }
      try (ReplayWindow w = readReplay(endpoint, from, through)) {
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

  /** Reports in the index how far behind its engine the stream is, every second. */
  private void reportLagIfDue() {
    if (!timers.due(Due.LAG_REPORT)) {
      return;
    }
    long now = shared.nanos();
    timers.in(Due.LAG_REPORT, LAG_REPORT_EVERY);
    Batch waiting = sequencer.oldestPending();
    long ms = lag.report(waiting == null ? Double.NaN : waiting.events().timestamp(), now);
    try {
      shared
          .index()
          .reportLagAsync(id, Duration.ofMillis(ms), LAG_REPORT_TTL)
          .whenComplete(
              (done, e) -> {
                if (e != null || !done) {
                  shared.metrics().swallowed(Operation.LAG);
                }
              });
    } catch (RuntimeException e) {
      shared.metrics().realError(Operation.LAG);
      log.debug("{}: cannot report its lag: {}", label, e.toString());
    }
  }

  /**
   * A quiet stream asks for anything after its watermark that it may have missed; so does one whose
   * live socket reconnected ({@code reconnected}), whatever waits. A stream that must wait for a
   * replay slot asks again at its next step.
   */
  private void catchUp(boolean reconnected) {
    String endpoint = pod.replayEndpoint(id.dpRank());
    boolean may =
        reconnected ? sequencer.started() && !sequencer.purgePending() : sequencer.mayCatchUp();
    if (endpoint == null || !may) {
      reconnectCheckOwed &= !reconnected;
      return;
    }
    if (!replaySlot()) {
      if (!reconnected) {
        askTheRingSoon();
      }
      return;
    }
    reconnectCheckOwed &= !reconnected;
    List<Batch> replayed;
    boolean applyNow = false;
    try (ReplayWindow w = readReplay(endpoint, sequencer.catchUpFrom(), Long.MAX_VALUE)) {
      replayed = w.batches();
      if (w.tooLarge()) {
        shared.metrics().replay("too_large");
      } else if (!sequencer.sameEngine(replayed)) {
        anotherEngine(replayed);
      } else if (reconnected) {
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
      progress();
      if (status.liveReceived() == liveAtLastCatchUp) {
        reopenDeafSocket(replayed.size());
      }
    }
    liveAtLastCatchUp = status.liveReceived();
  }

  /**
   * Whether this stream holds a replay slot now; when it must wait, it stays in line for as long as
   * it asks again at each step.
   */
  private boolean replaySlot() {
    if (memory.slots().tryAcquire(id)) {
      return true;
    }
    wantedReplay = true;
    return false;
  }

  /** Reads a replay from {@code from} (this stream holds a slot) into a window of the budget. */
  private ReplayWindow readReplay(String endpoint, long from, long through) {
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
   */
  private void historyRead(ReplayWindow w) {
    historyOwed = w.cut();
    if (historyOwed) {
      sequencer.historyCut();
      askTheRingSoon();
    }
  }

  /**
   * Ends a step: the replay slot goes back once the stream holds no history and owes none, and a
   * stream that did not ask for one this step leaves the line.
   */
  private void settleReplaySlot() {
    if (!wantedReplay && !historyOwed && sequencer.replayedBytes() == 0) {
      memory.slots().release(id);
    }
  }

  /**
   * The publisher published batches that never reached this SUB socket since the last catch-up: a
   * connection can stay stuck in its handshake (seen with jeromq on loopback). A new socket
   * subscribes afresh; the replay covers what the switch misses.
   */
  private void reopenDeafSocket(int published) {
    log.warn(
        "{}: {} batches published but none received live; reopening the SUB socket",
        label,
        published);
    shared.metrics().reconnect();
    closeSocket();
  }

  /** Carries out the sequencer's actions until it has nothing to do or something must wait. */
  private void progress() {
    while (running) {
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
        goOn = !halted && (sub == null || !sub.waiting()) && carryOut(writes.publish(sequencer));
      } else if (action instanceof RepairGap g) {
        goOn = repairGap(g);
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
        more < Sequencer.MAX_PARTS && sub != null && !sequencer.purgePending() && sub.waiting();
        more++) {
      take(sub.receive());
    }
  }

  private boolean runPurge(RunPurge action) {
    shared.faults().beforeWriteUninterruptibly();
    return !halted && carryOut(writes.purge(sequencer, action, inference.model()));
  }

  private boolean apply(Apply action) {
    inference.beforeApply();
    shared.faults().beforeWriteUninterruptibly();
    long appliedBefore = status.lastAppliedNanos();
    boolean goOn = !halted && carryOut(writes.apply(sequencer, action, status, inference.model()));
    if (status.lastAppliedNanos() != appliedBefore) {
      appliedLate(action);
    }
    return goOn;
  }

  /**
   * Measures the lag of an applied call's batches; an inferring stream that cannot keep up stops. A
   * staged rebuild (the ring replayed from its start after a purge, which cleared the model) is
   * history, not lag, and is not judged.
   */
  private void appliedLate(Apply action) {
    if (action.staged()) {
      return;
    }
    long now = shared.nanos();
    boolean behind = false;
    double last = 0;
    for (Batch part : action.parts()) {
      last = part.events().timestamp();
      behind |= lag.applied(last, now);
    }
    EvictionModel model = inference.model();
    if (behind && model != null && !model.callInFlight()) {
      inference.stop(lag.lagMillis(last, now));
    }
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
        indexLost();
        return true;
      }
      default -> {
        backOff();
        return false;
      }
    }
  }

  private boolean repairGap(RepairGap gap) {
    if (!gap.malformed()) {
      shared.metrics().gap();
    }
    String endpoint = pod.replayEndpoint(id.dpRank());
    GapRepair repair;
    if (endpoint == null) {
      repair = sequencer.noReplay(gap);
    } else {
      if (!replaySlot()) {
        return false; // asked again at the next step, in line for a slot
      }
      log.info(
          "{}: {} {}..{}, replaying from {}",
          label,
          gap.malformed() ? "unreadable batch" : "gap",
          gap.from(),
          gap.firstLive() - 1,
          gap.from());
      try (ReplayWindow w = readReplay(endpoint, sequencer.replayFrom(gap), Long.MAX_VALUE)) {
        List<Batch> replayed = w.batches();
        if (!w.tooLarge() && !sequencer.sameEngine(replayed)) {
          anotherEngine(replayed);
          return true;
        }
        replayed = sequencer.notApplied(replayed);
        if (w.cut() && replayed.isEmpty() && w.firstOffered() > gap.from()) {
          // No room for a batch, but the ring's oldest is past the gap: no window can cover it.
          repair = sequencer.beyondRing(gap, w.firstOffered());
          historyRead(w);
        } else if (w.cut() && replayed.isEmpty()) {
          // The ring covers the gap but the window had no room for its first batch: history held
          // past the gap took it, and cannot be applied before the gap. It is let go (read again
          // later) and the gap asked for at once; with nothing to let go, after a backoff.
          shared.metrics().replay("cut");
          historyRead(w);
          if (sequencer.dropHistory()) {
            return true;
          }
          backOff();
          return false;
        } else {
          repair =
              w.tooLarge()
                  ? sequencer.replayTooLarge(gap)
                  : sequencer.replayed(gap, replayed, w.ended());
          historyRead(w);
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

  private void closeSocket() {
    if (sub != null) {
      sub.close();
      sub = null;
    }
  }

  private void park(Duration d) {
    long end = shared.nanos() + d.toNanos();
    while (running && shared.nanos() - end < 0) {
      LockSupport.parkNanos(Math.min(end - shared.nanos(), 50_000_000L));
    }
  }
}
