package io.kvindex.ingester.stream;

import io.kvindex.common.Await;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
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
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventDecoder;
import java.time.Duration;
import java.util.Arrays;
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
 * marked pod's stream starts the same way, from what the former owner left in the index (its
 * model's size and the removals it had decided and not applied, refreshed every {@link
 * #HANDOVER_EVERY} when they changed). Purges clear the model with the index's entries. Inference
 * lasts as long as the worker, unless the stream cannot keep up with it: applied at least {@code
 * --inference-lag-limit} late through as long a stretch of its engine's time, it says so, stops
 * inferring and does not infer again for {@link #INFERENCE_HOLD_OFF}.
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

  /** How long a priming that waits for a replay slot sleeps before it asks again. */
  static final Duration SLOT_WAIT = Duration.ofMillis(50);

  /** How often a stream that drops live batches says so, at most. */
  static final Duration DROP_LOG_INTERVAL = Duration.ofSeconds(10);

  /** The longest wait before the inference's Redis calls are tried again after they failed. */
  static final Duration INFERENCE_RETRY_MAX = Duration.ofSeconds(30);

  /**
   * How often a stream whose evictions are inferred compares what its model would hand over with
   * what it last left in the index, and leaves it again when it changed (else every {@link
   * #MARK_EVERY}, for {@link #MARK_TTL}).
   */
  static final Duration HANDOVER_EVERY = Duration.ofMillis(250);

  /** How long a stream that could not keep up while inferring does not infer again. */
  static final Duration INFERENCE_HOLD_OFF = Duration.ofMinutes(10);

  /** How often the stream reports its lag in the index, and how long a report stands there. */
  static final Duration LAG_REPORT_EVERY = Duration.ofSeconds(1);

  static final Duration LAG_REPORT_TTL = Duration.ofMinutes(1);

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
  private final StreamLag lag;
  private long lagReportDueNanos;
  private long handoverDueNanos;
  private long handedOverAtNanos;
  private InferenceHandover handedOver;
  private boolean heldOff;
  private long heldOffUntilNanos;

  private final MemoryBudget memory;

  /** A replay stopped at its window: the rest of the history is still to be read. */
  private boolean historyOwed;

  /** This step asked for a replay slot and was told to wait. */
  private boolean wantedReplay;

  /** The live socket reconnected and the ring's copy of the last applied batch is still to see. */
  private boolean reconnectCheckOwed;

  private long droppedSinceLog;
  private long dropLoggedNanos;

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
    this.inferenceRetry = new Backoff(shared.config().retryMax(), INFERENCE_RETRY_MAX);
    this.label = "pod=" + id.pod() + " stream=" + id;
    this.writes = new IndexWrites(shared, id, mode, lease, label);
    this.lag = new StreamLag(shared.config().inferenceLagLimit(), () -> shared.clock().millis());
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
      if (model != null) {
        if (!halted && state != State.FENCED) {
          handOver(model.handover()); // a next owner goes on from it
        }
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
    reportLagIfDue();
    progressIfDue();
    handOverIfDue();
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
      Batch batch = decoded(m.message(), true);
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
      case DROPPED -> dropped(batch, "stream_bound");
      case OVER_BUDGET -> dropped(batch, "memory_budget");
      case QUEUED -> {
        // applied by the step, in order
      }
    }
  }

  /**
   * A live batch the stream could not hold (its own bounds, or the process's memory budget): the
   * gap it leaves is replayed later. Counted; logged at most every 10 s.
   */
  private void dropped(Batch batch, String reason) {
    shared.metrics().dropped(reason);
    droppedSinceLog++;
    long now = shared.nanos();
    if (droppedSinceLog == 1 || now - dropLoggedNanos > DROP_LOG_INTERVAL.toNanos()) {
      log.warn(
          "{}: live batch {} dropped ({}: {} bytes waiting, the process holds {} of its {}-byte"
              + " memory budget); {} dropped since the last line, replayed later as a gap",
          label,
          batch.seq(),
          reason,
          sequencer.pendingBytes(),
          memory.used(),
          memory.total(),
          droppedSinceLog);
      dropLoggedNanos = now;
      droppedSinceLog = 0;
    }
  }

  private Batch decoded(EventMessage message, boolean live) {
    Batch batch = Batch.decode(message, live, mode);
    if (batch.malformed() != null) {
      malformed(batch);
    } else {
      learnFrom(message, batch);
    }
    return batch;
  }

  /** What a well-formed batch, live or replayed, teaches: the engines' keys and cache groups. */
  private void learnFrom(EventMessage message, Batch batch) {
    checkKeys(message, batch);
    learnLayout(batch);
  }

  /**
   * Hands the batch to the key check when the check is due for the model and the batch has a store
   * that starts a chain (the only kind it can recompute). Engine-keyed batches are decoded without
   * their token ids, so such a batch is decoded again with them, at most once per check. Never
   * fails ingest.
   */
  private void checkKeys(EventMessage message, Batch batch) {
    try {
      if (!shared.keyChecks().due(id.model()) || !startsAChain(batch.events())) {
        return;
      }
      KvEventBatch events =
          mode == KeyMode.TOKEN ? batch.events() : KvEventDecoder.decode(message.payload());
      shared.keyChecks().sample(id.model(), mode, events);
    } catch (RuntimeException e) {
      log.warn("{}: the key check failed on batch {}; ingest goes on", label, batch.seq(), e);
    }
  }

  /** Hands the batch's stores to the layout learner; never fails ingest. */
  private void learnLayout(Batch batch) {
    try {
      shared.layouts().observe(id.model(), batch.events());
    } catch (RuntimeException e) {
      log.warn(
          "{}: learning the cache groups failed on batch {}; ingest goes on",
          label,
          batch.seq(),
          e);
    }
  }

  private static boolean startsAChain(KvEventBatch events) {
    for (KvEvent event : events.events()) {
      if (event instanceof BlockStored store && store.parentBlockHash() == null) {
        return true;
      }
    }
    return false;
  }

  private void malformed(Batch batch) {
    shared.metrics().malformed();
    log.warn(
        "{}: batch {} ({}) cannot be read: {}",
        label,
        batch.seq(),
        batch.live() ? "live; its replay copy is tried next" : "replayed",
        batch.malformed());
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
      inferEvictions(capacity, "resync", "a router's resync request: " + note, null);
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
   * The capacity to infer the engine's evictions with, in full-attention blocks: the one its {@code
   * /metrics} reported ({@link EngineCapacity#fullAttentionBlocks}), else {@code marked} (the one
   * recorded in the pod's mark); 0 when they cannot be inferred.
   */
  private int inferable(int marked) {
    if (!shared.config().inferEvictions() || mode != KeyMode.ENGINE || heldOff()) {
      return 0;
    }
    int scraped =
        status
            .capacity()
            .fullAttentionBlocks(shared.layouts().layout(id.model()).orElse(CacheLayout.empty()));
    return scraped > 0 ? scraped : marked;
  }

  /** Whether the stream stopped inferring, unable to keep up, too recently to start again. */
  private boolean heldOff() {
    return heldOff && shared.nanos() - heldOffUntilNanos < 0;
  }

  private String whyNotInferred() {
    if (heldOff()) {
      return "it could not keep up while inferring them, less than "
          + INFERENCE_HOLD_OFF.toMinutes()
          + " min ago";
    }
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
  private void inferEvictions(int capacity, String start, String why, InferenceHandover from) {
    shared.metrics().inferring(true);
    model = new EvictionModel(capacity);
    sequencer.mergeWithin(shared.index().applyChunkBlocks() / 2);
    touchCursor = null;
    touchesDueNanos = shared.nanos();
    markDueNanos = shared.nanos();
    handedOver = null;
    lag.forgive();
    if (from != null) {
      model.resize(from.sizeBlocks()); // before priming: the ring is taken in at that size
    }
    int primed = prime();
    if (from != null) {
      model.evict(from.removals());
    }
    log.warn(
        "{}: its engine's evictions are inferred from now on ({}): a model of its {}"
            + " full-attention blocks{},"
            + " primed from {} batches of its ring and fed by the requests routers observe, removes"
            + " from the index what it evicts; nothing is purged",
        label,
        why,
        capacity,
        from == null
            ? ""
            : " (as the former owner left it: "
                + from.sizeBlocks()
                + " held, "
                + from.removals().length
                + " removals to apply)",
        primed);
    shared.metrics().inferenceStarted(start);
  }

  /**
   * The stream's batches were applied late through a long stretch of its engine's time while it
   * inferred: it cannot keep up. It stops inferring (what its model decided and did not apply yet
   * stays listed) and follows what its engine publishes, as a stream that cannot infer does.
   */
  private void stopInferring(long lateMillis) {
    Duration limit = shared.config().inferenceLagLimit();
    log.warn(
        "{}: cannot keep up while inferring its engine's evictions: its batches were applied at"
            + " least {} s late through {} s of its engine's time ({} ms late now); it stops"
            + " inferring, follows only what its engine publishes (as with --infer-evictions"
            + " false), and does not infer again for {} min",
        label,
        limit.toSeconds(),
        limit.toSeconds(),
        lateMillis,
        INFERENCE_HOLD_OFF.toMinutes());
    shared.metrics().inferenceStopped("behind");
    shared.metrics().inferring(false);
    model = null;
    touchCursor = null;
    handedOver = null;
    sequencer.mergeWithin(shared.index().applyChunkBlocks());
    heldOff = true;
    heldOffUntilNanos = shared.nanos() + INFERENCE_HOLD_OFF.toNanos();
    lag.forgive();
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
      InferenceHandover from;
      try {
        from = shared.index().inferenceHandover(id).orElse(null);
      } catch (RuntimeException e) {
        inferenceFailed("reading what the former owner handed over", e);
        from = null; // the model starts from the ring alone
      }
      inferEvictions(
          inferable(marked.getAsInt()), "takeover", "the pod is marked so by a former owner", from);
    }
  }

  /**
   * Leaves what the next owner of the stream needs of its model in the index, when it changed since
   * it was last left there (or that is getting old).
   */
  private void handOverIfDue() {
    long now = shared.nanos();
    if (model == null || now - handoverDueNanos < 0) {
      return;
    }
    handoverDueNanos = now + HANDOVER_EVERY.toNanos();
    InferenceHandover h = model.handover();
    boolean same =
        handedOver != null
            && handedOver.sizeBlocks() == h.sizeBlocks()
            && Arrays.equals(handedOver.removals(), h.removals());
    if (!same || now - handedOverAtNanos >= MARK_EVERY.toNanos()) {
      handOver(h);
    }
  }

  private void handOver(InferenceHandover h) {
    handedOver = h;
    handedOverAtNanos = shared.nanos();
    try {
      shared
          .index()
          .handOverInferenceAsync(id, h, MARK_TTL)
          .whenComplete(
              (done, e) -> {
                if (e != null || !done) {
                  shared.metrics().swallowed(Operation.INFERENCE);
                }
              });
    } catch (RuntimeException e) {
      inferenceFailed("leaving its model for its next owner", e);
    }
  }

  /** Reports in the index how far behind its engine the stream is, every second. */
  private void reportLagIfDue() {
    long now = shared.nanos();
    if (now - lagReportDueNanos < 0) {
      return;
    }
    lagReportDueNanos = now + LAG_REPORT_EVERY.toNanos();
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
            this::malformed,
            this::learnFrom);
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
    return !halted && carryOut(writes.purge(sequencer, action, model));
  }

  private boolean apply(Apply action) {
    if (model != null && touchCursor != null && shared.nanos() - touchesBeforeApplyAt >= 0) {
      readTouches();
    }
    shared.faults().beforeWriteUninterruptibly();
    long appliedBefore = status.lastAppliedNanos();
    boolean goOn = !halted && carryOut(writes.apply(sequencer, action, status, model));
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
    if (behind && model != null && !model.callInFlight()) {
      stopInferring(lag.lagMillis(last, now));
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
