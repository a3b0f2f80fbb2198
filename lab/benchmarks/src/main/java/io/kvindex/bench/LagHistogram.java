package io.kvindex.bench;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import java.util.concurrent.TimeUnit;

/**
 * A snapshot of a Micrometer timer's percentile-histogram buckets, so that percentiles can be read
 * for the window between two snapshots. Immutable.
 */
final class LagHistogram {
  private final double[] boundsMillis;
  private final double[] cumulative;
  private final double maxMillis;

  private LagHistogram(double[] boundsMillis, double[] cumulative, double maxMillis) {
    this.boundsMillis = boundsMillis;
    this.cumulative = cumulative;
    this.maxMillis = maxMillis;
  }

  static LagHistogram of(Timer timer) {
    HistogramSnapshot snapshot = timer.takeSnapshot();
    CountAtBucket[] buckets = snapshot.histogramCounts();
    double[] bounds = new double[buckets.length];
    double[] counts = new double[buckets.length];
    boolean cumulative = true;
    for (int i = 0; i < buckets.length; i++) {
      bounds[i] = buckets[i].bucket(TimeUnit.MILLISECONDS);
      counts[i] = buckets[i].count();
      if (i > 0 && counts[i] < counts[i - 1]) {
        cumulative = false;
      }
    }
    if (!cumulative) {
      for (int i = 1; i < counts.length; i++) {
        counts[i] += counts[i - 1];
      }
    }
    return new LagHistogram(bounds, counts, snapshot.max(TimeUnit.MILLISECONDS));
  }

  /** The buckets' counts since {@code earlier}. */
  LagHistogram minus(LagHistogram earlier) {
    double[] counts = cumulative.clone();
    for (int i = 0; i < counts.length && i < earlier.cumulative.length; i++) {
      counts[i] -= earlier.cumulative[i];
    }
    return new LagHistogram(boundsMillis, counts, maxMillis);
  }

  long count() {
    return cumulative.length == 0 ? 0 : Math.round(cumulative[cumulative.length - 1]);
  }

  /**
   * The percentage of samples at or below {@code millis}, exact when a bucket ends there (the lag
   * timer has one at 5 ms); otherwise that of the highest bucket below it. -1 with no samples.
   */
  double percentAtMost(double millis) {
    double total = count();
    if (total == 0) {
      return -1;
    }
    double within = 0;
    for (int i = 0; i < cumulative.length && boundsMillis[i] <= millis + 1e-9; i++) {
      within = cumulative[i];
    }
    return Math.round(within / total * 1000) / 10.0;
  }

  /** The upper bound of the bucket holding the {@code quantile} (0 to 1); -1 with no samples. */
  double percentileMillis(double quantile) {
    double total = count();
    if (total == 0) {
      return -1;
    }
    for (int i = 0; i < cumulative.length; i++) {
      if (cumulative[i] >= quantile * total) {
        return LatencyRecorder.roundTenth(boundsMillis[i]);
      }
    }
    return Double.POSITIVE_INFINITY;
  }
}
