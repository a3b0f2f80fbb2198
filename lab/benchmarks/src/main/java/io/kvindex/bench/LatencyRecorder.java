package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

/**
 * An HdrHistogram of nanosecond latencies (1 ns to 60 s, 3 significant digits) reported in
 * microseconds. Not thread-safe: one recorder per measuring thread, merged with {@link #add}.
 */
final class LatencyRecorder {
  private final Histogram histogram = new Histogram(60_000_000_000L, 3);

  void recordNanos(long nanos) {
    histogram.recordValue(Math.max(1, Math.min(nanos, histogram.getHighestTrackableValue())));
  }

  void add(LatencyRecorder other) {
    histogram.add(other.histogram);
  }

  long count() {
    return histogram.getTotalCount();
  }

  /** The latency at {@code percentile} (0 to 100) in microseconds, to 0.1 us. */
  double micros(double percentile) {
    return roundTenth(histogram.getValueAtPercentile(percentile) / 1000.0);
  }

  double maxMicros() {
    return roundTenth(histogram.getMaxValue() / 1000.0);
  }

  double meanMicros() {
    return roundTenth(histogram.getMean() / 1000.0);
  }

  /** p50, p90, p99, p99.9, max and mean under {@code prefix_pNN_us} names. */
  void writeTo(ObjectNode json, String prefix) {
    json.put(prefix + "_p50_us", micros(50));
    json.put(prefix + "_p90_us", micros(90));
    json.put(prefix + "_p99_us", micros(99));
    json.put(prefix + "_p999_us", micros(99.9));
    json.put(prefix + "_max_us", maxMicros());
    json.put(prefix + "_mean_us", meanMicros());
    json.put(prefix + "_samples", count());
  }

  static double roundTenth(double value) {
    return Math.round(value * 10.0) / 10.0;
  }
}
