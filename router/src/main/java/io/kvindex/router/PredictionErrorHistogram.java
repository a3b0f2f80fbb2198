package io.kvindex.router;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.IntConsumer;

/**
 * The signed prediction-error histogram ({@value #NAME}) of {@link LoopMetrics}, registered in the
 * Prometheus registry behind Micrometer's Prometheus meter registry. Micrometer's Prometheus
 * registry is an optional dependency of the router library: this class is the only one that names
 * it, and it is loaded only when that registry is on the classpath. Thread-safe.
 */
final class PredictionErrorHistogram {
  static final String NAME = "kvindex_router_prediction_error_blocks";
  private static final double[] BOUNDS = {-64, -32, -16, -8, -4, -2, -1, 0, 1, 2, 4, 8, 16, 32, 64};
  private static final String PROMETHEUS_REGISTRY =
      "io.micrometer.prometheusmetrics.PrometheusMeterRegistry";
  private static final boolean PROMETHEUS = present(PROMETHEUS_REGISTRY);

  private PredictionErrorHistogram() {}

  /**
   * The histogram's observer for {@code registry}, or {@code null} when it is not Micrometer's
   * Prometheus registry (or that registry is not on the classpath).
   */
  static IntConsumer of(MeterRegistry registry) {
    if (!PROMETHEUS) {
      return null;
    }
    return Registered.of(registry);
  }

  private static boolean present(String className) {
    try {
      Class.forName(className, false, PredictionErrorHistogram.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** The code that names Prometheus's classes, linked only when they are present. */
  private static final class Registered {
    /** One histogram per Prometheus registry, whichever routers share it. */
    private static final Map<PrometheusRegistry, Histogram> HISTOGRAMS = new WeakHashMap<>();

    private Registered() {}

    static IntConsumer of(MeterRegistry registry) {
      if (!(registry instanceof PrometheusMeterRegistry p)) {
        return null;
      }
      Histogram histogram = histogram(p.getPrometheusRegistry());
      return histogram::observe;
    }

    private static Histogram histogram(PrometheusRegistry prometheus) {
      synchronized (HISTOGRAMS) {
        return HISTOGRAMS.computeIfAbsent(
            prometheus,
            r ->
                Histogram.builder()
                    .name(NAME)
                    .help(
                        "Prediction error per observed request, in blocks: predicted minus what"
                            + " the engine reported (positive: the index thought the pod warmer)")
                    .classicOnly()
                    .withoutExemplars()
                    .classicUpperBounds(BOUNDS)
                    .register(r));
      }
    }
  }
}
