package io.kvindex.ingester.stream;

import io.kvindex.common.Await;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.MemoryBounds;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.Sequencer.Action;
import io.kvindex.ingester.stream.Sequencer.Apply;
import io.kvindex.ingester.stream.Sequencer.GapRepair;
import io.kvindex.ingester.stream.Sequencer.Publish;
import io.kvindex.ingester.stream.Sequencer.RepairGap;
import io.kvindex.ingester.stream.Sequencer.RunPurge;
import io.kvindex.ingester.stream.StreamStatus.State;
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.wire.EventMessage;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
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
 * #TOUCH_READ_BEFORE_APPLY}) and every {@link #TOUCH_READ_INTERVAL} while idle. A new owner of a
 * marked pod's stream starts the same way. Purges clear the model with the index's entries;
 * inference lasts as long as the worker.
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

  /** How often a stream whose evictions are inferred reads its pod's touches while idle. */
  static final Duration TOUCH_READ_INTERVAL = Duration.ofMillis(100);

  /**
   * How long a busy stream whose evictions are inferred may go without reading its pod's touches
   * before an apply: the requests a router observed came before the batches that follow them, and
   * the model is truer to the engine when it takes them in that order.
   */
  static final Duration TOUCH_READ_BEFORE_APPLY = Duration.ofMillis(20);

  /**
   * Touches read at most per call (which also stops at about {@link
   * PrefixIndex#MAX_TOUCH_READ_BYTES}); a read that left some is followed by another at once.
   */
  static final int TOUCHES_PER_READ = 64;

  /** How long the pod's mark stands after a refresh; it is refreshed every {@link #MARK_EVERY}. */
  static final Duration MARK_TTL = Duration.ofMinutes(1);

  static final Duration MARK_EVERY = Duration.ofSeconds(5);

  /** The longest wait before the inference's Redis calls are tried again after they failed. */
  static final Duration INFERENCE_RETRY_MAX = Duration.ofSeconds(30);

  private volatile boolean running = true;
  private volatile boolean halted;
  private State state = State.STARTING;
  private LiveSocket sub;
  private boolean lastReportedAsleep;
  private long liveAtLastCatchUp = -1;
  private long retryAtNanos;
  private long quietSinceNanos;
  private EvictionModel model;
  private String touchCursor;
  private long touchesDueNanos;
  private long markDueNanos;

  /** Touches are read before an apply from then on (a read lately, or a failure, holds it off). */
  private long touchesBeforeApplyAt;

  private boolean resumeDue;
  private long resumeDueNanos;
  private final Backoff inferenceRetry;

  public StreamWorker(
      StreamId id, KeyMode mode, PodSpec pod, Lease lease, Shared shared, Listener listener) {
    this.id = id;
    this.mode = mode;
    this.pod = pod;
    this.lease = lease;
    this.shared = shared;
    this.listener = listener;
    this.sequencer =
        new Sequencer(
            shared.config().maxPendingBatches(),
            shared.config().memoryBounds().pendingBytes(),
            mode,
            shared.index().applyChunkBlocks());
    this.retry = new Backoff(shared.config().retryMin(), shared.config().retryMax());
    this.reconnect = new Backoff(shared.config().reconnectMin(), shared.config().reconnectMax());
    this.inferenceRetry = new Backoff(shared.config().retryMax(), INFERENCE_RETRY_MAX);
    this.label = "pod=" + id.pod() + " stream=" + id;
    this.writes = new IndexWrites(shared, id, mode, lease, label);
    long now = shared.nanos();
    this.status = new StreamStatus(now);
    this.quietSinceNanos = now;
    this.retryAtNanos = now;
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
          step();
        } catch (IndexWrites.FencedException e) {
          fenced();
          break;
        } catch (RuntimeException e) {
          failed(e);
        }
      }
    } finally {
      if (model != null) {
        shared.metrics().inferring(false);
      }
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
    inferIfDue();
    progressIfDue();
    if (sub.reconnected()) {
      // Maybe another process on the same endpoint, whose first batches were never heard: before
      // anything more is applied, compare the ring's copy of the last applied batch.
      catchUp(true);
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
      onLive(decoded(m.message(), true));
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
        retryAtNanos = shared.nanos();
      }
    }
    String reason;
    while ((reason = status.nextPurgeRequest()) != null) {
      sequencer.requestPurge(reason);
      // The purge shows as pending before its request leaves the queue: the coordinator releases
      // a departed pod's lease only once neither holds it.
      status.progress(sequencer);
      status.dropPurgeRequest();
      retryAtNanos = shared.nanos();
    }
    status.progress(sequencer);
  }

  private void progressIfDue() {
    if (shared.nanos() - retryAtNanos >= 0) {
      progress();
    }
  }

  private boolean openSocket() {
    try {
      sub = LiveSocket.open(shared, pod, id.dpRank());
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
      resumeInferring();
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
      case DROPPED -> {
        // the gap this leaves is replayed later
      }
      case QUEUED -> {
        // applied by the step, in order
      }
    }
  }

  private Batch decoded(EventMessage message, boolean live) {
    Batch batch = Batch.decode(message, live);
    if (batch.malformed() != null) {
      shared.metrics().malformed();
      log.warn(
          "{}: batch {} ({}) cannot be read: {}",
          label,
          batch.seq(),
          live ? "live; its replay copy is tried next" : "replayed",
          batch.malformed());
    }
    return batch;
  }

  private List<Batch> replayed(List<EventMessage> messages) {
    return messages.stream().map(m -> decoded(m, false)).toList();
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
    retryAtNanos = shared.nanos();
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
    retryAtNanos = shared.nanos();
    askTheRingSoon();
  }

  private void resync(String note) {
    if (model != null) {
      log.info(
          "{}: a router asks for a resync ({}), but the stream infers its engine's evictions"
              + " already: not purged again",
          label,
          note);
      return;
    }
    int capacity = inferable(0);
    if (capacity > 0) {
      inferEvictions(capacity, "resync", "a router's resync request: " + note);
      return;
    }
    log.warn(
        "{}: resyncing on a router's request ({}): purging, then replaying what the ring covers;"
            + " evictions are not inferred: {}",
        label,
        note,
        whyNotInferred());
    sequencer.resync();
    status.progress(sequencer);
    retryAtNanos = shared.nanos();
    askTheRingSoon();
  }

  /**
   * The capacity to infer the engine's evictions with: the one its {@code /metrics} reported, else
   * {@code marked} (the one recorded in the pod's mark); 0 when they cannot be inferred.
   */
  private int inferable(int marked) {
    if (!shared.config().inferEvictions() || mode != KeyMode.ENGINE) {
      return 0;
    }
    int scraped = status.capacityBlocks();
    return scraped > 0 ? scraped : marked;
  }

  private String whyNotInferred() {
    if (!shared.config().inferEvictions()) {
      return "--infer-evictions is off";
    }
    if (mode != KeyMode.ENGINE) {
      return "the model is keyed by token keys, and routers' touches carry engine keys only";
    }
    return "the engine's /metrics gave no KV-cache capacity (num_gpu_blocks of"
        + " vllm:cache_config_info); give the pod its metrics URL";
  }

  /**
   * Starts inferring the engine's evictions (the stream infers none yet).
   *
   * @param start what started it, as counted ({@code resync}, {@code takeover})
   */
  private void inferEvictions(int capacity, String start, String why) {
    shared.metrics().inferring(true);
    model = new EvictionModel(capacity);
    sequencer.mergeWithin(shared.index().applyChunkBlocks() / 2);
    touchCursor = null;
    touchesDueNanos = shared.nanos();
    markDueNanos = shared.nanos();
    int primed = prime();
    log.warn(
        "{}: its engine's evictions are inferred from now on ({}): a model of its {} blocks,"
            + " primed from {} batches of its ring and fed by the requests routers observe, removes"
            + " from the index what it evicts; nothing is purged",
        label,
        why,
        capacity,
        primed);
    shared.metrics().inferenceStarted(start);
  }

  /**
   * Primes the model from the engine's ring, up to the watermark (what the index applied); returns
   * the batches taken in. No ring, or one too large to fetch, leaves the model empty.
   */
  private int prime() {
    String endpoint = pod.replayEndpoint(id.dpRank());
    long through = sequencer.applied();
    if (endpoint == null || through < 0) {
      return 0;
    }
    Replay.Result r = fetchReplay(endpoint, 0);
    if (r.tooLarge()) {
      shared.metrics().replay("too_large");
      return 0;
    }
    List<Batch> history = replayed(r.batches());
    model.prime(history, through);
    return (int) history.stream().filter(b -> b.seq() <= through).count();
  }

  /**
   * A new owner of a stream whose pod is marked (a former owner inferred its evictions) goes on
   * inferring them, primed from the ring as the first owner was. A Redis that does not answer, or
   * an error, is tried again later (the stream goes on meanwhile).
   */
  private void resumeInferring() {
    resumeDue = false;
    if (model != null || inferable(1) == 0) {
      return;
    }
    OptionalInt marked;
    try {
      marked = Await.of(shared.index().evictionsInferred(id.model(), id.pod()));
    } catch (RuntimeException e) {
      resumeDueNanos = inferenceFailed("reading whether its evictions are inferred", e);
      resumeDue = true;
      return;
    }
    if (marked.isPresent()) {
      inferEvictions(
          inferable(marked.getAsInt()), "takeover", "the pod is marked so by a former owner");
    }
  }

  /**
   * A Redis call of the inference failed: counted and logged (at most once per retry interval), and
   * tried again after a backoff of its own; ingestion goes on. Returns when to try again.
   */
  private long inferenceFailed(String what, RuntimeException e) {
    long retryNanos = inferenceRetry.next().toNanos();
    if (e instanceof RedisUnavailableException) {
      shared.metrics().swallowed(Operation.INFERENCE);
      log.debug("{}: {} met a temporary error: {}", label, what, e.toString());
    } else {
      shared.metrics().realError(Operation.INFERENCE);
      log.warn(
          "{}: {} failed ({}); tried again in {} ms, the stream goes on meanwhile",
          label,
          what,
          e.toString(),
          retryNanos / 1_000_000);
    }
    return shared.nanos() + retryNanos;
  }

  /** Refreshes the pod's mark and reads its touches, when due, while evictions are inferred. */
  private void inferIfDue() {
    if (resumeDue && shared.nanos() - resumeDueNanos >= 0) {
      resumeInferring();
    }
    if (model == null) {
      return;
    }
    if (shared.nanos() - markDueNanos >= 0) {
      try {
        if (shared
            .index()
            .markEvictionsInferred(id.model(), id.pod(), model.capacity(), MARK_TTL)) {
          inferenceRetry.reset();
          markDueNanos = shared.nanos() + MARK_EVERY.toNanos();
        } else {
          shared.metrics().swallowed(Operation.INFERENCE);
          markDueNanos = shared.nanos() + inferenceRetry.next().toNanos();
        }
      } catch (RuntimeException e) {
        markDueNanos = inferenceFailed("marking the pod's evictions inferred", e);
      }
    }
    if (shared.nanos() - touchesDueNanos >= 0) {
      readTouches();
    }
  }

  private void readTouches() {
    Touches read;
    try {
      read = shared.index().touches(id, touchCursor, TOUCHES_PER_READ);
    } catch (RuntimeException e) {
      touchesDueNanos = inferenceFailed("reading the pod's touches", e);
      touchesBeforeApplyAt = Math.max(touchesBeforeApplyAt, touchesDueNanos);
      return;
    }
    if (touchCursor != null) {
      model.touched(read.touches(), id.dpRank(), pod.dpRanks().size() == 1);
      shared.metrics().touches(read.touches().size());
    }
    touchCursor = read.cursor();
    touchesBeforeApplyAt = shared.nanos() + TOUCH_READ_BEFORE_APPLY.toNanos();
    touchesDueNanos = shared.nanos() + (read.more() ? 0 : TOUCH_READ_INTERVAL.toNanos());
  }

  /**
   * A quiet stream asks for anything after its watermark that it may have missed; so does one whose
   * live socket reconnected ({@code reconnected}), whatever waits.
   */
  private void catchUp(boolean reconnected) {
    String endpoint = pod.replayEndpoint(id.dpRank());
    boolean may =
        reconnected ? sequencer.started() && !sequencer.purgePending() : sequencer.mayCatchUp();
    if (endpoint == null || !may) {
      return;
    }
    Replay.Result r = fetchReplay(endpoint, sequencer.catchUpFrom());
    List<Batch> replayed = replayed(r.batches());
    if (r.tooLarge()) {
      shared.metrics().replay("too_large");
    } else if (!sequencer.sameEngine(replayed)) {
      anotherEngine(replayed);
    } else if (reconnected) {
      shared.metrics().replay("reconnect");
      sequencer.caughtUp(sequencer.notApplied(replayed));
      return;
    } else if (!(replayed = sequencer.notApplied(replayed)).isEmpty()) {
      log.info("{}: quiet stream caught up {} batches from replay", label, replayed.size());
      shared.metrics().replay("idle_catch_up");
      sequencer.caughtUp(replayed);
      progress();
      if (status.liveReceived() == liveAtLastCatchUp) {
        reopenDeafSocket(replayed.size());
      }
    } else if (r.ended()) {
      sequencer.caughtUp(List.of()); // nothing newer than the watermark
    }
    liveAtLastCatchUp = status.liveReceived();
  }

  private Replay.Result fetchReplay(String endpoint, long from) {
    MemoryBounds bounds = shared.config().memoryBounds();
    Replay.Result r =
        Replay.fetch(
            shared.zmq(),
            endpoint,
            from,
            shared.config().replayIdleTimeout(),
            bounds.replayBytes(),
            bounds.messageBytes());
    if (r.ended() || r.tooLarge() || !r.batches().isEmpty()) {
      status.aliveAt(shared.nanos()); // the engine's replay socket answered
    }
    return r;
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
        shared.gate().passUninterruptibly();
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
    }
  }

  private boolean runPurge(RunPurge action) {
    shared.gate().passUninterruptibly();
    return !halted && carryOut(writes.purge(sequencer, action, model));
  }

  private boolean apply(Apply action) {
    if (model != null && touchCursor != null && shared.nanos() - touchesBeforeApplyAt >= 0) {
      readTouches();
    }
    shared.gate().passUninterruptibly();
    return !halted && carryOut(writes.apply(sequencer, action, status, model));
  }

  /** Whether the stream goes on after a write. */
  private boolean carryOut(IndexWrites.Outcome outcome) {
    switch (outcome) {
      case DONE -> {
        succeeded();
        return true;
      }
      case LOST -> {
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
      log.info(
          "{}: {} {}..{}, replaying from {}",
          label,
          gap.malformed() ? "unreadable batch" : "gap",
          gap.from(),
          gap.firstLive() - 1,
          gap.from());
      Replay.Result r = fetchReplay(endpoint, sequencer.replayFrom(gap));
      List<Batch> replayed = replayed(r.batches());
      if (!r.tooLarge() && !sequencer.sameEngine(replayed)) {
        anotherEngine(replayed);
        return true;
      }
      repair =
          r.tooLarge()
              ? sequencer.replayTooLarge(gap)
              : sequencer.replayed(gap, sequencer.notApplied(replayed), r.ended());
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
    retryAtNanos = shared.nanos() + retry.next().toNanos();
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
