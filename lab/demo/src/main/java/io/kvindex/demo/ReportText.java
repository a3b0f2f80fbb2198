package io.kvindex.demo;

import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** How the demo's summary writes its lines and figures. Thread-safe (stateless). */
final class ReportText {
  private ReportText() {}

  /** A latency in milliseconds as the summary prints it: {@code -} when unknown. */
  static String millis(double ms) {
    if (Double.isNaN(ms)) {
      return "-";
    }
    if (Double.isInfinite(ms)) {
      return "> 60 s";
    }
    return String.format(Locale.ROOT, ms < 10 ? "%.1f ms" : "%.0f ms", ms);
  }

  /** Counts as {@code key=value} pairs, or {@code none}. */
  static String join(Map<String, ? extends Number> counts) {
    if (counts.isEmpty()) {
      return "none";
    }
    return counts.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(" "));
  }

  static String joinInts(Map<String, Integer> counts) {
    return join(counts);
  }

  /** Appends one formatted line (in the root locale). */
  static void line(StringBuilder s, String format, Object... args) {
    s.append(String.format(Locale.ROOT, format, args)).append('\n');
  }
}
