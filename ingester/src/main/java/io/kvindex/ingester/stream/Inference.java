package io.kvindex.ingester.stream;

import io.kvindex.common.Await;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.Timers.Due;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.Arrays;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream's inferred evictions: the life of its {@link EvictionModel}, started on a router's
 * resync or from a former owner's mark, fed with the touches routers record, left for a next owner,
 * and stopped when the stream cannot keep up. Its Redis calls fail without failing ingest: each is
 * counted, logged and tried again after a backoff of its own. Not thread-safe: the stream's worker
 * thread calls it.
 *
 * <p>Why. A router that finds the pod over-predicted asks for a resync: purge, then apply again
 * what the replay ring covers. That cannot help an engine that evicts without publishing (the ring
 * lacks the evictions too), and it drops the pod's hottest prefixes (a prefix hit publishes
 * nothing, so they predate the ring). So when the engine reports its KV-cache capacity (engine keys
 * only) the stream starts an {@link EvictionModel} instead: primed from the ring without purging
 * anything, fed every later batch, it removes what it evicts with the next apply; the pod is marked
 * in the index so that routers send the blocks of the requests they observe (touches), which the
 * worker reads before its applies (at most every {@link #TOUCH_READ_BEFORE_APPLY}) and every {@link
 * #TOUCH_READ_INTERVAL} while idle. A new owner of a marked pod's stream starts the same way, from
 * what the former owner left in the index (its model's size and the removals it had decided and not
 * applied, refreshed every {@link #HANDOVER_EVERY} when they changed). Purges clear the model with
 * the index's entries. Inference lasts as long as the worker, unless the stream cannot keep up with
 * it: applied at least {@code --inference-lag-limit} late through as long a stretch of its engine's
 * time, it says so, stops inferring and does not infer again for {@link #INFERENCE_HOLD_OFF}.
 */
final class Inference {
  private static final Logger log = LoggerFactory.getLogger(StreamWorker.class);

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

  /**
   * How often a stream whose evictions are inferred compares what its model would hand over with
   * what it last left in the index, and leaves it again when it changed (else every {@link
   * #MARK_EVERY}, for {@link #MARK_TTL}).
   */
  static final Duration HANDOVER_EVERY = Duration.ofMillis(250);

  /** How long a stream that could not keep up while inferring does not infer again. */
  static final Duration INFERENCE_HOLD_OFF = Duration.ofMinutes(10);

  /** Primes a new model from the engine's ring; returns the batches taken in. */
  interface Primer {
    int prime(EvictionModel model);
  }

  private final Shared shared;
  private final StreamId id;
  private final KeyMode mode;
  private final PodSpec pod;
  private final String label;
  private final StreamStatus status;
  private final Sequencer sequencer;
  private final StreamLag lag;
  private final Timers timers;
  private final Primer primer;
  private final Backoff retry;
  private EvictionModel model;
  private String touchCursor;
  private InferenceHandover handedOver;
  private long handedOverAtNanos;

  Inference(
      Shared shared,
      StreamId id,
      KeyMode mode,
      PodSpec pod,
      String label,
      StreamStatus status,
      Sequencer sequencer,
      StreamLag lag,
      Timers timers,
      Primer primer) {
    this.shared = shared;
    this.id = id;
    this.mode = mode;
    this.pod = pod;
    this.label = label;
    this.status = status;
    this.sequencer = sequencer;
    this.lag = lag;
    this.timers = timers;
    this.primer = primer;
    this.retry = new Backoff(shared.config().retryMax(), INFERENCE_RETRY_MAX);
  }

  /** The stream's eviction model, or null while it infers none. */
  EvictionModel model() {
    return model;
  }

  /**
   * A router asks for a resync: the stream infers its engine's evictions instead of purging, when
   * it can. Returns whether the request is taken care of (inferring already, or from now on); else
   * the caller purges and replays ({@link #whyNot} says why).
   */
  boolean resync(String note) {
    if (model != null) {
      log.info(
          "{}: a router asks for a resync ({}), but the stream infers its engine's evictions"
              + " already: not purged again",
          label,
          note);
      return true;
    }
    int capacity = inferable(0);
    if (capacity > 0) {
      start(capacity, "resync", "a router's resync request: " + note, null);
      return true;
    }
    return false;
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
    return timers.pending(Due.HELD_OFF);
  }

  /** Why the stream's evictions cannot be inferred now. */
  String whyNot() {
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
  private void start(int capacity, String start, String why, InferenceHandover from) {
    shared.metrics().inferring(true);
    model = new EvictionModel(capacity);
    sequencer.mergeWithin(shared.index().applyChunkBlocks() / 2);
    touchCursor = null;
    timers.now(Due.TOUCHES);
    timers.now(Due.MARK);
    handedOver = null;
    lag.forgive();
    if (from != null) {
      model.resize(from.sizeBlocks()); // before priming: the ring is taken in at that size
    }
    int primed = primer.prime(model);
    if (from != null) {
      model.evict(from.removals());
    }
    log.warn(
        "{}: its engine's evictions are inferred from now on ({}): a model of its {}"
            + " full-attention blocks{}, primed from {} batches of its ring and fed by the requests"
            + " routers observe, removes from the index what it evicts; nothing is purged",
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
   * Measures the lag of an applied call's batches; an inferring stream that cannot keep up stops. A
   * staged rebuild (the ring replayed from its start after a purge, which cleared the model) is
   * history, not lag, and is not judged.
   */
  void applied(Action.Apply action) {
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
      stop(lag.lagMillis(last, now));
    }
  }

  /**
   * The stream's batches were applied late through a long stretch of its engine's time while it
   * inferred: it cannot keep up. It stops inferring (what its model decided and did not apply yet
   * stays listed) and follows what its engine publishes, as a stream that cannot infer does.
   */
  private void stop(long lateMillis) {
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
    timers.in(Due.HELD_OFF, INFERENCE_HOLD_OFF);
    lag.forgive();
  }

  /**
   * A new owner of a stream whose pod is marked (a former owner inferred its evictions) goes on
   * inferring them, primed from the ring as the first owner was. A Redis that does not answer, or
   * an error, is tried again later (the stream goes on meanwhile).
   */
  void resume() {
    timers.disarm(Due.RESUME);
    if (model != null || inferable(1) == 0) {
      return;
    }
    OptionalInt marked;
    try {
      marked = Await.of(shared.index().evictionsInferredAsync(id.model(), id.pod()));
    } catch (RuntimeException e) {
      timers.at(Due.RESUME, failed("reading whether its evictions are inferred", e));
      return;
    }
    if (marked.isPresent()) {
      InferenceHandover from;
      try {
        from = shared.index().inferenceHandover(id).orElse(null);
      } catch (RuntimeException e) {
        failed("reading what the former owner handed over", e);
        from = null; // the model starts from the ring alone
      }
      start(
          inferable(marked.getAsInt()), "takeover", "the pod is marked so by a former owner", from);
    }
  }

  /** Refreshes the pod's mark and reads its touches, when due, while evictions are inferred. */
  void markAndReadIfDue() {
    if (timers.due(Due.RESUME)) {
      resume();
    }
    if (model == null) {
      return;
    }
    if (timers.due(Due.MARK)) {
      try {
        if (shared
            .index()
            .markEvictionsInferred(id.model(), id.pod(), model.capacity(), MARK_TTL)) {
          retry.reset();
          timers.in(Due.MARK, MARK_EVERY);
        } else {
          shared.metrics().swallowed(Operation.INFERENCE);
          timers.in(Due.MARK, retry.next());
        }
      } catch (RuntimeException e) {
        timers.at(Due.MARK, failed("marking the pod's evictions inferred", e));
      }
    }
    if (timers.due(Due.TOUCHES)) {
      readTouches();
    }
  }

  /** Before an apply: the touches recorded since the last read, unless read lately. */
  void beforeApply() {
    if (model != null && touchCursor != null && timers.due(Due.TOUCHES_BEFORE_APPLY)) {
      readTouches();
    }
  }

  private void readTouches() {
    Touches read;
    try {
      read = shared.index().touches(id, touchCursor, TOUCHES_PER_READ);
    } catch (RuntimeException e) {
      long retryAt = failed("reading the pod's touches", e);
      timers.at(Due.TOUCHES, retryAt);
      timers.notBefore(Due.TOUCHES_BEFORE_APPLY, retryAt);
      return;
    }
    if (touchCursor != null) {
      model.touched(read.touches(), id.dpRank(), pod.dpRanks().size() == 1);
      shared.metrics().touches(read.touches().size());
    }
    touchCursor = read.cursor();
    timers.in(Due.TOUCHES_BEFORE_APPLY, TOUCH_READ_BEFORE_APPLY);
    timers.in(Due.TOUCHES, read.more() ? Duration.ZERO : TOUCH_READ_INTERVAL);
  }

  /**
   * Leaves what the next owner of the stream needs of its model in the index, when it changed since
   * it was last left there (or that is getting old).
   */
  void handOverIfDue() {
    if (model == null || !timers.due(Due.HANDOVER)) {
      return;
    }
    long now = shared.nanos();
    timers.in(Due.HANDOVER, HANDOVER_EVERY);
    InferenceHandover h = model.handover();
    boolean same =
        handedOver != null
            && handedOver.sizeBlocks() == h.sizeBlocks()
            && Arrays.equals(handedOver.removals(), h.removals());
    if (!same || now - handedOverAtNanos >= MARK_EVERY.toNanos()) {
      handOver(h);
    }
  }

  /** The worker ends: a model is left for a next owner ({@code leave}), and counted no more. */
  void exit(boolean leave) {
    if (model != null) {
      if (leave) {
        handOver(model.handover());
      }
      shared.metrics().inferring(false);
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
      failed("leaving its model for its next owner", e);
    }
  }

  /**
   * A Redis call of the inference failed: counted and logged (at most once per retry interval), and
   * tried again after a backoff of its own; ingestion goes on. Returns when to try again.
   */
  private long failed(String what, RuntimeException e) {
    long retryNanos = retry.next().toNanos();
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
}
