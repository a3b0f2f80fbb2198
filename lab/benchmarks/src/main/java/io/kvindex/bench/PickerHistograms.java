package io.kvindex.bench;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The endpoint picker's own timings as {@code bench epp} reads them from its registry: its step
 * timers, its pick histograms, and their quantiles as Prometheus computes them. Thread-safe
 * (stateless).
 */
final class PickerHistograms {
  private PickerHistograms() {}

  /** The picker's step timers now: per step, the count and the total nanoseconds. */
  static Map<String, double[]> steps(PrometheusMeterRegistry registry) {
    Map<String, double[]> out = new TreeMap<>();
    for (Timer t : registry.find("kvindex.epp.pick.steps").timers()) {
      out.put(
          t.getId().getTag("step"), new double[] {t.count(), t.totalTime(TimeUnit.NANOSECONDS)});
    }
    return out;
  }

  /**
   * The picker's pick histograms now ({@code kvindex.epp.pick}, by its {@code at} tag): per tag,
   * the cumulative count at each bucket's upper bound (bounds in nanoseconds, in the odd
   * positions).
   */
  static Map<String, double[]> buckets(PrometheusMeterRegistry registry) {
    Map<String, double[]> out = new TreeMap<>();
    for (Timer t : registry.find("kvindex.epp.pick").timers()) {
      CountAtBucket[] counts = t.takeSnapshot().histogramCounts();
      double[] flat = new double[counts.length * 2];
      for (int i = 0; i < counts.length; i++) {
        flat[2 * i] = counts[i].bucket(TimeUnit.NANOSECONDS);
        flat[2 * i + 1] = counts[i].count();
      }
      out.put(t.getId().getTag("at"), flat);
    }
    return out;
  }

  /** The counts of {@code now} less those of {@code before}, bucket by bucket. */
  static double[] minus(double[] now, double[] before) {
    if (now == null) {
      return new double[] {0, 0};
    }
    double[] out = now.clone();
    for (int i = 1; before != null && i < out.length; i += 2) {
      out[i] -= before[i];
    }
    return out;
  }

  /**
   * The quantile {@code q} of cumulative bucket counts, in microseconds, as Prometheus's {@code
   * histogram_quantile} computes it: linear within the bucket it falls in.
   */
  static double quantileMicros(double[] buckets, double q) {
    double total = buckets[buckets.length - 1];
    if (total <= 0) {
      return 0;
    }
    double rank = q * total;
    double lower = 0;
    double below = 0;
    for (int i = 0; i < buckets.length; i += 2) {
      double upper = buckets[i];
      double count = buckets[i + 1];
      if (count >= rank) {
        double within = count - below;
        double v = within <= 0 ? upper : lower + (upper - lower) * (rank - below) / within;
        return LatencyRecorder.roundTenth(v / 1000.0);
      }
      lower = upper;
      below = count;
    }
    return LatencyRecorder.roundTenth(lower / 1000.0);
  }
}
