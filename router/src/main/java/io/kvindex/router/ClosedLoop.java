package io.kvindex.router;

import io.kvindex.index.ClosedLoopStore;
import io.kvindex.index.IngestLag;
import io.kvindex.index.KeyMode;
import io.kvindex.index.ResyncStatus;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The closed loop of {@link KvRouter#observe}: what the engines report against what the index
 * predicted. Each observation is metered ({@link LoopMetrics}) and judged ({@link DriftWatch}); a
 * pod the index over-predicts is suspect, and its owner is asked to resync it (purge, then replay
 * what its ring covers, from then on inferring the engine's evictions when it can) through a
 * request in Redis that stands one interval whoever asks; a pod it under-predicts is not purged,
 * which would only make it colder. Each verdict is one log line. An observation of a pod whose
 * evictions the index infers is also recorded there as a touch (its prompt's blocks, how many of
 * them the engine served from its cache, and the error), which the pod's owners feed their model of
 * its cache; whether a pod is inferred is read from Redis at most once per {@link #INFERRED_REUSE}
 * per pod.
 *
 * <p>Lag is not drift. A stream that has not yet applied its engine's removals lists blocks the
 * engine dropped, and one that has not applied its stores lacks blocks it holds: its pod's errors
 * say nothing of the index's truth, and a resync would only make a stream that cannot keep up do
 * more. So each observation is judged only when the pod's streams keep up: their owners report
 * their lag in Redis every second ({@link ClosedLoopStore#ingestLagAsync}, read at most once per
 * {@link #INFERRED_REUSE} per pod, its answer used for {@link #LAG_REPORT_STALE}), and a pod with a
 * stream {@link #LAG_EXCUSES} or more behind, or whose owner has not reported for {@link
 * #LAG_REPORT_STALE}, is not judged ({@code kvindex_router_drift_unjudged_total}, one log line per
 * pod at most every {@link #QUIET_WITHOUT_RESYNC}). Thread-safe.
 */
final class ClosedLoop {
  private static final Logger log = LoggerFactory.getLogger(ClosedLoop.class);

  /** How long a verdict holds the pod's next one back when resyncs are off. */
  static final Duration QUIET_WITHOUT_RESYNC = Duration.ofMinutes(1);

  /** How long what Redis said of a pod's inferred evictions is reused. */
  static final Duration INFERRED_REUSE = Duration.ofSeconds(1);

  private static final long REUSE_NANOS = INFERRED_REUSE.toNanos();

  private static final long QUIET_NANOS = QUIET_WITHOUT_RESYNC.toNanos();

  /** How long a pod's touches stand after the last one (its owners read them within a second). */
  static final Duration TOUCH_TTL = Duration.ofMinutes(1);

  /** Pods whose inferred state is kept at most (the least recently observed is forgotten). */
  static final int INFERRED_PODS = DriftWatch.MAX_PODS;

  /** A stream reported at least this far behind its engine explains its pod's errors. */
  static final Duration LAG_EXCUSES = Duration.ofSeconds(1);

  /**
   * A stream's report this old means an owner that does not keep up with its own reports (one a
   * second): behind too. What Redis said of a pod's lag is used for as long.
   */
  static final Duration LAG_REPORT_STALE = Duration.ofSeconds(3);

  /** A report this old is no one's now (the stream stopped, or its new owner has not reported). */
  static final Duration LAG_REPORT_GONE = Duration.ofSeconds(30);

  private static final long STALE_NANOS = LAG_REPORT_STALE.toNanos();

  /** What Redis said of a pod, and when it was asked last. */
  private static final class PodState {
    volatile boolean inferred;
    volatile long inferredAsked;
    final AtomicBoolean askingInferred = new AtomicBoolean();
    volatile boolean behind;
    volatile long lagAsked;
    volatile long lagAnswered;
    volatile boolean lagKnown;
    final AtomicBoolean askingLag = new AtomicBoolean();
    volatile long loggedBehind;
    volatile boolean loggedOnce;

    PodState(long askedNanos) {
      this.inferredAsked = askedNanos;
      this.lagAsked = askedNanos;
    }
  }

  private final Map<DriftWatch.Pod, PodState> pods =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<DriftWatch.Pod, PodState> eldest) {
          return size() > INFERRED_PODS;
        }
      };

  private final ClosedLoopStore index;
  private final LoopMetrics metrics;
  private final DriftWatch watch;
  private final Duration resyncInterval;
  private final LongSupplier nanos;
  private final String self = "router pid " + ProcessHandle.current().pid();

  /**
   * @param resyncInterval how long one resync request stands (zero: suspects are counted and
   *     logged, never resynced); also how long a verdict holds the pod's next one back ({@link
   *     #QUIET_WITHOUT_RESYNC} when zero)
   */
  ClosedLoop(
      ClosedLoopStore index,
      LoopMetrics metrics,
      int window,
      double threshold,
      Duration resyncInterval,
      LongSupplier nanos) {
    this.index = index;
    this.metrics = metrics;
    this.resyncInterval = resyncInterval;
    this.nanos = nanos;
    Duration quiet = resyncInterval.isZero() ? QUIET_WITHOUT_RESYNC : resyncInterval;
    this.watch = new DriftWatch(window, threshold, quiet.toNanos());
  }

  /**
   * Meters and judges one observation; asks for a resync, without waiting, when it is due. Returns
   * the prediction's error in blocks.
   */
  int observe(Observation o, ModelKeys keys) {
    int error = o.errorBlocks(keys.blockSize());
    metrics.observed(o.pod(), error);
    if (o.blockKeys() != null && evictionsInferred(o.model(), o.pod())) {
      index
          .touchAsync(
              o.model(),
              o.pod(),
              o.rank(),
              o.blockKeys(),
              error,
              o.actual(keys.blockSize()),
              TOUCH_TTL)
          .whenComplete((done, e) -> metrics.touch(e == null && done));
    }
    if (o.speculative() && error > 0) {
      // The excess may be the route's alone (a request the engine had not computed yet, or has
      // evicted since): the index's own entries are not in question.
      metrics.unjudged(LoopMetrics.Unjudged.SPECULATIVE);
      return error;
    }
    if (lagging(o.model(), o.pod())) {
      metrics.unjudged(LoopMetrics.Unjudged.LAG);
      return error;
    }
    DriftWatch.Judged judged = watch.observe(o.model(), o.pod(), error, nanos.getAsLong());
    switch (judged.verdict()) {
      case OVER -> overPredicted(o, judged, keys.mode());
      case UNDER -> underPredicted(o, judged);
      case NONE -> {
        // nothing to do
      }
    }
    return error;
  }

  /**
   * Whether the index infers the pod's evictions, as Redis last said (asked again, without waiting,
   * once what it said is {@link #INFERRED_REUSE} old; false until it first answers).
   */
  boolean evictionsInferred(String model, String pod) {
    long now = nanos.getAsLong();
    PodState state = state(model, pod, now);
    if (now - state.inferredAsked >= REUSE_NANOS
        && state.askingInferred.compareAndSet(false, true)) {
      state.inferredAsked = now;
      try {
        index
            .evictionsInferredAsync(model, pod)
            .whenComplete(
                (capacity, e) -> {
                  if (e == null) {
                    state.inferred = capacity.isPresent();
                  } // else: Redis did not answer; what it said last stands
                  state.askingInferred.set(false);
                });
      } catch (RuntimeException e) {
        state.askingInferred.set(false);
        log.debug("pod={} model={}: cannot ask whether its evictions are inferred", pod, model, e);
      }
    }
    return state.inferred;
  }

  private PodState state(String model, String pod, long now) {
    synchronized (pods) {
      return pods.computeIfAbsent(
          new DriftWatch.Pod(model, pod), p -> new PodState(now - REUSE_NANOS));
    }
  }

  /**
   * Whether the pod's streams lag behind their engine, as Redis last said (asked again, without
   * waiting, once what it said is {@link #INFERRED_REUSE} old; false until it first answers, and
   * once its answer is {@link #LAG_REPORT_STALE} old).
   */
  boolean lagging(String model, String pod) {
    long now = nanos.getAsLong();
    PodState state = state(model, pod, now);
    if (now - state.lagAsked >= REUSE_NANOS && state.askingLag.compareAndSet(false, true)) {
      state.lagAsked = now;
      try {
        index
            .ingestLagAsync(model, pod)
            .whenComplete(
                (lags, e) -> {
                  if (e == null) {
                    state.behind = behind(lags);
                    state.lagAnswered = nanos.getAsLong();
                    state.lagKnown = true;
                  } // else: Redis did not answer; what it said last stands while it is fresh
                  state.askingLag.set(false);
                });
      } catch (RuntimeException e) {
        state.askingLag.set(false);
        log.debug("pod={} model={}: cannot read its streams' lag", pod, model, e);
      }
    }
    boolean behind = state.lagKnown && state.behind && now - state.lagAnswered < STALE_NANOS;
    if (behind && (!state.loggedOnce || now - state.loggedBehind >= QUIET_NANOS)) {
      state.loggedOnce = true;
      state.loggedBehind = now;
      log.info(
          "pod={} model={}: its streams lag behind its engine (or do not report how far): its"
              + " observed requests are not judged for drift until they catch up",
          pod,
          model);
    }
    return behind;
  }

  /** Whether a stream of these reports is behind its engine, or its owner does not report. */
  static boolean behind(List<IngestLag> lags) {
    for (IngestLag l : lags) {
      boolean gone = l.age().compareTo(LAG_REPORT_GONE) >= 0;
      boolean stale = l.age().compareTo(LAG_REPORT_STALE) >= 0;
      if (!gone && (stale || l.lag().compareTo(LAG_EXCUSES) >= 0)) {
        return true;
      }
    }
    return false;
  }

  private void overPredicted(Observation o, DriftWatch.Judged judged, KeyMode mode) {
    metrics.suspect(DriftWatch.Verdict.OVER);
    String why =
        String.format(
            Locale.ROOT,
            "over-predicted in %d of its last %d observed requests (the index lists blocks the"
                + " engine no longer holds)",
            judged.over(),
            judged.window());
    String notResynced =
        mode != KeyMode.ENGINE
            ? "the model is keyed by token keys, and its ingester could only purge and replay it,"
                + " which loses its hottest prefixes (eviction inference needs engine keys)"
            : resyncInterval.isZero() ? "resyncs are off (resync-interval 0)" : null;
    if (notResynced != null) {
      metrics.resync("off");
      log.warn("pod={} model={}: {}; not resynced: {}", o.pod(), o.model(), why, notResynced);
      return;
    }
    index
        .requestResyncAsync(o.model(), o.pod(), self + ": " + why, resyncInterval)
        .whenComplete(
            (status, error) -> {
              String outcome = error != null ? "failed" : status.name().toLowerCase(Locale.ROOT);
              metrics.resync(outcome);
              log.warn(
                  "pod={} model={}: {}; {}",
                  o.pod(),
                  o.model(),
                  why,
                  error != null
                      ? "the resync request failed (" + error.getMessage() + ")"
                      : resyncOutcome(status));
            });
  }

  private String resyncOutcome(ResyncStatus status) {
    return switch (status) {
      case REQUESTED ->
          "asked the ingester that owns it to resync it (purge, then replay what its ring"
              + " covers, inferring its evictions from then on when its engine reports its"
              + " capacity)";
      case STANDING ->
          "a resync request already stands for it (another router's, or this one's), for up to "
              + resyncInterval.toSeconds()
              + " s";
      case UNAVAILABLE -> "Redis was unavailable: asked again at the next verdict";
    };
  }

  private void underPredicted(Observation o, DriftWatch.Judged judged) {
    metrics.suspect(DriftWatch.Verdict.UNDER);
    log.warn(
        "pod={} model={}: under-predicted in {} of its last {} observed requests (the engine holds"
            + " blocks the index does not list); not purged, which would only make it colder: its"
            + " streams catch up from their watermarks",
        o.pod(),
        o.model(),
        judged.under(),
        judged.window());
  }
}
