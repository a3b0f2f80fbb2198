package io.kvindex.router;

import io.kvindex.index.KeyMode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.ResyncStatus;
import java.time.Duration;
import java.util.LinkedHashMap;
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
 * evictions the index infers is also recorded there as a touch (its prompt's blocks and the error),
 * which the pod's owners feed their model of its cache; whether a pod is inferred is read from
 * Redis at most once per {@link #INFERRED_REUSE} per pod. Thread-safe.
 */
final class ClosedLoop {
  private static final Logger log = LoggerFactory.getLogger(ClosedLoop.class);

  /** How long a verdict holds the pod's next one back when resyncs are off. */
  static final Duration QUIET_WITHOUT_RESYNC = Duration.ofMinutes(1);

  /** How long what Redis said of a pod's inferred evictions is reused. */
  static final Duration INFERRED_REUSE = Duration.ofSeconds(1);

  private static final long REUSE_NANOS = INFERRED_REUSE.toNanos();

  /** How long a pod's touches stand after the last one (its owners read them within a second). */
  static final Duration TOUCH_TTL = Duration.ofMinutes(1);

  /** Pods whose inferred state is kept at most (the least recently observed is forgotten). */
  static final int INFERRED_PODS = DriftWatch.MAX_PODS;

  /** What Redis said of a pod's evictions: inferred or not, and when it was asked last. */
  private static final class Inferred {
    volatile boolean inferred;
    volatile long askedNanos;
    final AtomicBoolean asking = new AtomicBoolean();

    Inferred(long askedNanos) {
      this.askedNanos = askedNanos;
    }
  }

  private final Map<DriftWatch.Pod, Inferred> inferred =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<DriftWatch.Pod, Inferred> eldest) {
          return size() > INFERRED_PODS;
        }
      };

  private final PrefixIndex index;
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
      PrefixIndex index,
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
    Inferred state;
    synchronized (inferred) {
      state =
          inferred.computeIfAbsent(
              new DriftWatch.Pod(model, pod), p -> new Inferred(now - REUSE_NANOS));
    }
    if (now - state.askedNanos >= REUSE_NANOS && state.asking.compareAndSet(false, true)) {
      state.askedNanos = now;
      try {
        index
            .evictionsInferred(model, pod)
            .whenComplete(
                (capacity, e) -> {
                  if (e == null) {
                    state.inferred = capacity.isPresent();
                  } // else: Redis did not answer; what it said last stands
                  state.asking.set(false);
                });
      } catch (RuntimeException e) {
        state.asking.set(false);
        log.debug("pod={} model={}: cannot ask whether its evictions are inferred", pod, model, e);
      }
    }
    return state.inferred;
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
