package io.kvindex.epp;

/**
 * What one engine's {@code /metrics} said at one scrape: the figures the reference picker reads.
 * Immutable, so thread-safe.
 *
 * @param waiting {@code vllm:num_requests_waiting}, summed over the engine's cores
 * @param running {@code vllm:num_requests_running}, summed over the engine's cores
 * @param kvCacheUsage {@code vllm:kv_cache_usage_perc} (before vLLM 0.10: {@code
 *     vllm:gpu_cache_usage_perc}), a fraction from 0 to 1, the highest of the engine's cores
 * @param atNanos when the scrape answered, on the picker's monotonic clock
 */
public record EngineStats(double waiting, double running, double kvCacheUsage, long atNanos) {

  static final String WAITING = "vllm:num_requests_waiting";
  static final String RUNNING = "vllm:num_requests_running";
  static final String KV_USAGE = "vllm:kv_cache_usage_perc";
  static final String KV_USAGE_BEFORE_0_10 = "vllm:gpu_cache_usage_perc";

  /** Reads the three figures from a Prometheus text exposition; a metric the text lacks reads 0. */
  static EngineStats parse(String text, long atNanos) {
    double waiting = 0;
    double running = 0;
    double usage = -1;
    double usageBefore010 = -1;
    int start = 0;
    while (start < text.length()) {
      int end = text.indexOf('\n', start);
      if (end < 0) {
        end = text.length();
      }
      if (text.charAt(start) != '#') {
        String name = name(text, start, end);
        if (name != null) {
          switch (name) {
            case WAITING -> waiting += value(text, start, end);
            case RUNNING -> running += value(text, start, end);
            case KV_USAGE -> usage = Math.max(usage, value(text, start, end));
            case KV_USAGE_BEFORE_0_10 ->
                usageBefore010 = Math.max(usageBefore010, value(text, start, end));
            default -> {}
          }
        }
      }
      start = end + 1;
    }
    double kv = usage >= 0 ? usage : Math.max(usageBefore010, 0);
    return new EngineStats(waiting, running, kv, atNanos);
  }

  /** The metric name of a sample line, or null for a blank one. */
  private static String name(String text, int start, int end) {
    int i = start;
    while (i < end && text.charAt(i) != '{' && text.charAt(i) != ' ') {
      i++;
    }
    return i == start ? null : text.substring(start, i);
  }

  /** The sample's value: the first field after the labels; NaN and bad numbers read 0. */
  private static double value(String text, int start, int end) {
    int close = text.lastIndexOf('}', end - 1);
    int from = close >= start ? close + 1 : text.indexOf(' ', start);
    if (from < 0 || from >= end) {
      return 0;
    }
    String rest = text.substring(from, end).trim();
    int space = rest.indexOf(' ');
    String number = space < 0 ? rest : rest.substring(0, space);
    try {
      double v = Double.parseDouble(number);
      return Double.isFinite(v) && v > 0 ? v : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
