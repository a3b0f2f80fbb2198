package io.kvindex.ingester.reconcile;

import io.kvindex.ingester.stream.EngineCapacity;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads what the ingester needs out of an engine's Prometheus text page: {@code
 * vllm:engine_sleep_state}, the process start time (its incarnation) and the KV-cache capacity in
 * {@code vllm:cache_config_info} ({@link EngineCapacity}). Thread-safe (stateless).
 *
 * <p>An engine is asleep when {@code awake} is 0 and {@code weights_offloaded} or {@code
 * discard_all} is 1 (sleep level 1 or 2; both clear the prefix cache). A scheduler pause (all three
 * 0) is not a sleep.
 */
final class EngineMetrics {
  private static final Pattern LINE =
      Pattern.compile("^vllm:engine_sleep_state\\{([^}]*)}\\s+(\\S+)", Pattern.MULTILINE);
  private static final Pattern LABEL = Pattern.compile("(\\w+)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  private static final Pattern START =
      Pattern.compile("^process_start_time_seconds(?:\\{[^}]*})?\\s+(\\S+)", Pattern.MULTILINE);

  private static final Pattern CACHE_CONFIG =
      Pattern.compile("^vllm:cache_config_info\\{", Pattern.MULTILINE);

  /** One label and its comma; its value may hold any character, a closing brace and escapes too. */
  private static final Pattern NEXT_LABEL =
      Pattern.compile("\\s*(\\w+)=\"((?:[^\"\\\\]|\\\\.)*)\"\\s*,?");

  private EngineMetrics() {}

  /**
   * Engine index → its KV-cache capacity ({@code num_gpu_blocks}, {@code block_size} and {@code
   * kv_cache_size_tokens} of {@code vllm:cache_config_info}), for every engine the page reports
   * with a number of blocks there.
   */
  static Map<Integer, EngineCapacity> capacityByEngine(String page) {
    Map<Integer, EngineCapacity> out = new HashMap<>();
    Matcher m = CACHE_CONFIG.matcher(page);
    while (m.find()) {
      Map<String, String> labels = new HashMap<>();
      Matcher l = NEXT_LABEL.matcher(page).region(m.end(), page.length());
      while (l.lookingAt()) {
        labels.put(l.group(1), l.group(2));
        l.region(l.end(), page.length());
      }
      try {
        int blocks = Integer.parseInt(labels.getOrDefault("num_gpu_blocks", ""));
        if (blocks > 0) {
          out.put(
              Integer.parseInt(labels.getOrDefault("engine", "0")),
              new EngineCapacity(
                  blocks,
                  (int) number(labels.get("block_size")),
                  number(labels.get("kv_cache_size_tokens"))));
        }
      } catch (NumberFormatException e) {
        // None (not profiled yet) or a value we cannot read: the capacity stays unknown
      }
    }
    return out;
  }

  /** A label's whole number; 0 when absent, {@code None} or not one. */
  private static long number(String label) {
    try {
      return label == null ? 0 : Math.max(0, Long.parseLong(label));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** The page's {@code process_start_time_seconds} as written, or {@code null} if absent. */
  static String processStart(String page) {
    Matcher m = START.matcher(page);
    return m.find() ? m.group(1) : null;
  }

  /** Engine index → asleep, for every engine the page reports. */
  static Map<Integer, Boolean> asleepByEngine(String page) {
    Map<Integer, double[]> states = new HashMap<>();
    Matcher m = LINE.matcher(page);
    while (m.find()) {
      String engine = "0";
      String state = null;
      Matcher l = LABEL.matcher(m.group(1));
      while (l.find()) {
        if (l.group(1).equals("engine")) {
          engine = l.group(2);
        } else if (l.group(1).equals("sleep_state")) {
          state = l.group(2);
        }
      }
      int slot = slot(state);
      if (slot < 0) {
        continue;
      }
      try {
        double v = Double.parseDouble(m.group(2));
        states.computeIfAbsent(Integer.parseInt(engine), k -> new double[] {1, 0, 0})[slot] = v;
      } catch (NumberFormatException e) {
        // a series we cannot read says nothing about sleep
      }
    }
    Map<Integer, Boolean> out = new HashMap<>();
    states.forEach((k, v) -> out.put(k, v[0] == 0 && (v[1] == 1 || v[2] == 1)));
    return out;
  }

  private static int slot(String state) {
    if (state == null) {
      return -1;
    }
    switch (state) {
      case "awake":
        return 0;
      case "weights_offloaded":
        return 1;
      case "discard_all":
        return 2;
      default:
        return -1;
    }
  }
}
