package io.kvindex.router;

import io.kvindex.index.PrefixIndex;
import io.kvindex.index.ResyncStatus;
import java.time.Duration;
import java.util.Locale;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The closed loop of {@link KvRouter#observe}: what the engines report against what the index
 * predicted. Each observation is metered ({@link LoopMetrics}) and judged ({@link DriftWatch}); a
 * pod the index over-predicts is suspect, and its owner is asked to resync it (purge, then replay
 * what its ring covers) through a request in Redis that stands one interval whoever asks; a pod it
 * under-predicts is not purged, which would only make it colder. Each verdict is one log line.
 * Thread-safe.
 */
final class ClosedLoop {
  private static final Logger log = LoggerFactory.getLogger(ClosedLoop.class);

  /** How long a verdict holds the pod's next one back when resyncs are off. */
  static final Duration QUIET_WITHOUT_RESYNC = Duration.ofMinutes(1);

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
  int observe(Observation o, int blockSize) {
    int error = o.errorBlocks(blockSize);
    metrics.observed(o.pod(), error);
    DriftWatch.Judged judged = watch.observe(o.model(), o.pod(), error, nanos.getAsLong());
    switch (judged.verdict()) {
      case OVER -> overPredicted(o, judged);
      case UNDER -> underPredicted(o, judged);
      case NONE -> {
        // nothing to do
      }
    }
    return error;
  }

  private void overPredicted(Observation o, DriftWatch.Judged judged) {
    metrics.suspect(DriftWatch.Verdict.OVER);
    String why =
        String.format(
            Locale.ROOT,
            "over-predicted in %d of its last %d observed requests (the index lists blocks the"
                + " engine no longer holds)",
            judged.over(),
            judged.window());
    if (resyncInterval.isZero()) {
      metrics.resync("off");
      log.warn(
          "pod={} model={}: {}; not resynced: resyncs are off (resync-interval 0)",
          o.pod(),
          o.model(),
          why);
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
              + " covers)";
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
