package io.kvindex.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * The closed loop's meters. Thread-safe.
 *
 * <ul>
 *   <li>{@code kvindex_router_prediction_error_blocks}: a histogram of the signed prediction error
 *       (positive: the index thought the pod warmer than it was), buckets -64 ... 64. Micrometer's
 *       histograms drop negative values, so this one is a Prometheus histogram of its own ({@link
 *       PredictionErrorHistogram}), served when the registry is Micrometer's Prometheus registry
 *       (as the router service's is). The library does not depend on that registry: a gateway that
 *       has it on its classpath and meters into it gets the histogram.
 *   <li>{@code kvindex.router.predictions{pod, outcome}}: requests observed, by pod and outcome
 *       ({@code exact}, {@code over}, {@code under}); pods past the first {@value #TAGGED_PODS} are
 *       counted as {@code pod="other"}, so a request's pod name cannot grow the registry.
 *   <li>{@code kvindex.router.prediction.exact.ratio}: the share of exact predictions among the
 *       last {@value #RECENT} observed requests.
 *   <li>{@code kvindex.router.drift.suspects{direction}}: pods judged over- or under-predicted.
 *   <li>{@code kvindex.router.resync.requests{outcome}}: resync requests for over-predicted pods:
 *       {@code requested}, {@code standing} (another request stood), {@code unavailable}, {@code
 *       failed}, {@code off} (resyncs turned off).
 *   <li>{@code kvindex.router.touches{outcome}}: observations of pods whose evictions the index
 *       infers, recorded for their owners ({@code recorded}) or not ({@code failed}: Redis was
 *       unavailable).
 * </ul>
 */
final class LoopMetrics {
  static final int TAGGED_PODS = 1024;
  static final int RECENT = 1024;

  private final MeterRegistry registry;
  private final IntConsumer errors;
  private final Map<String, Counter[]> byPod = new HashMap<>();
  private final boolean[] recent = new boolean[RECENT];
  private int recentSize;
  private int recentNext;
  private int recentExact;
  private final Map<DriftWatch.Verdict, Counter> suspects = new HashMap<>();
  private final Map<String, Counter> resyncs = new HashMap<>();
  private final Counter touchesRecorded;
  private final Counter touchesFailed;
  private final Map<Unjudged, Counter> unjudged = new java.util.EnumMap<>(Unjudged.class);

  /** Why an observation was not judged for drift. */
  enum Unjudged {
    /** Its pod's streams lagged behind their engine (or did not report). */
    LAG,
    /** It over-predicted on a prediction that rested on speculative routes. */
    SPECULATIVE
  }

  LoopMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.errors = PredictionErrorHistogram.of(registry);
    Gauge.builder("kvindex.router.prediction.exact.ratio", this, LoopMetrics::exactShare)
        .description("Share of exact predictions among the last " + RECENT + " observed requests")
        .register(registry);
    for (DriftWatch.Verdict v :
        new DriftWatch.Verdict[] {DriftWatch.Verdict.OVER, DriftWatch.Verdict.UNDER}) {
      suspects.put(
          v,
          Counter.builder("kvindex.router.drift.suspects")
              .description("Pods this router judged over- or under-predicted")
              .tag("direction", v.name().toLowerCase(java.util.Locale.ROOT))
              .register(registry));
    }
    for (Unjudged reason : Unjudged.values()) {
      unjudged.put(
          reason,
          Counter.builder("kvindex.router.drift.unjudged")
              .description(
                  "Observed requests not judged for drift: their pod's streams lagged behind their"
                      + " engine (or did not report), or they over-predicted on speculative routes,"
                      + " either of which explains their errors")
              .tag("reason", reason.name().toLowerCase(java.util.Locale.ROOT))
              .register(registry));
    }
    this.touchesRecorded = touches("recorded");
    this.touchesFailed = touches("failed");
    for (String outcome : new String[] {"requested", "standing", "unavailable", "failed", "off"}) {
      resyncs.put(
          outcome,
          Counter.builder("kvindex.router.resync.requests")
              .description("Resync requests for over-predicted pods, by outcome")
              .tag("outcome", outcome)
              .register(registry));
    }
  }

  private Counter touches(String outcome) {
    return Counter.builder("kvindex.router.touches")
        .description(
            "Observations of pods whose evictions the index infers, recorded for their owners")
        .tag("outcome", outcome)
        .register(registry);
  }

  /** One observed request's error, in blocks. */
  void observed(String pod, int errorBlocks) {
    if (errors != null) {
      errors.accept(errorBlocks);
    }
    int outcome = errorBlocks == 0 ? 0 : errorBlocks > 0 ? 1 : 2;
    counters(pod)[outcome].increment();
    synchronized (recent) {
      boolean exact = errorBlocks == 0;
      if (recentSize == RECENT) {
        recentExact -= recent[recentNext] ? 1 : 0;
      } else {
        recentSize++;
      }
      recent[recentNext] = exact;
      recentExact += exact ? 1 : 0;
      recentNext = (recentNext + 1) % RECENT;
    }
  }

  /** An observation not judged for drift, and why. */
  void unjudged(Unjudged reason) {
    unjudged.get(reason).increment();
  }

  void suspect(DriftWatch.Verdict verdict) {
    suspects.get(verdict).increment();
  }

  void resync(String outcome) {
    resyncs.get(outcome).increment();
  }

  /** An observation recorded as a touch, or not (Redis was unavailable). */
  void touch(boolean recorded) {
    (recorded ? touchesRecorded : touchesFailed).increment();
  }

  private double exactShare() {
    synchronized (recent) {
      return recentSize == 0 ? Double.NaN : (double) recentExact / recentSize;
    }
  }

  private synchronized Counter[] counters(String pod) {
    String tag = byPod.containsKey(pod) || byPod.size() < TAGGED_PODS ? pod : "other";
    return byPod.computeIfAbsent(tag, this::register);
  }

  private Counter[] register(String pod) {
    Counter[] out = new Counter[3];
    String[] outcomes = {"exact", "over", "under"};
    for (int i = 0; i < 3; i++) {
      out[i] =
          Counter.builder("kvindex.router.predictions")
              .description("Observed requests by pod and how the index's prediction compared")
              .tag("pod", pod)
              .tag("outcome", outcomes[i])
              .register(registry);
    }
    return out;
  }
}
