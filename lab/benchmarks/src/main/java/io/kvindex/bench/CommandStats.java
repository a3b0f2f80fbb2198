package io.kvindex.bench;

import io.lettuce.core.api.sync.RedisCommands;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A snapshot of INFO commandstats (calls and total microseconds per command), to report the mean
 * server-side time per call between two snapshots. A script's time includes the commands it called
 * (which Redis counts under their own names too). Immutable.
 */
final class CommandStats {
  private static final Set<String> BOOKKEEPING =
      Set.of("slowlog|get", "slowlog|reset", "config|set", "config|get", "info", "ping");

  private final Map<String, long[]> stats;

  private CommandStats(Map<String, long[]> stats) {
    this.stats = stats;
  }

  static CommandStats read(RedisCommands<String, String> admin) {
    Map<String, long[]> stats = new TreeMap<>();
    for (String line : admin.info("commandstats").split("\\r?\\n")) {
      if (!line.startsWith("cmdstat_")) {
        continue;
      }
      String name = line.substring("cmdstat_".length(), line.indexOf(':'));
      long calls = 0;
      long usec = 0;
      for (String field : line.substring(line.indexOf(':') + 1).split(",")) {
        if (field.startsWith("calls=")) {
          calls = Long.parseLong(field.substring(6));
        } else if (field.startsWith("usec=")) {
          usec = Long.parseLong(field.substring(5));
        }
      }
      stats.put(name, new long[] {calls, usec});
    }
    return new CommandStats(stats);
  }

  /** Per command run since {@code before}: its calls and mean microseconds per call. */
  Map<String, Map<String, Number>> since(CommandStats before) {
    Map<String, Map<String, Number>> means = new TreeMap<>();
    stats.forEach(
        (name, now) -> {
          long[] then = before.stats.getOrDefault(name, new long[2]);
          long calls = now[0] - then[0];
          if (calls > 0 && !BOOKKEEPING.contains(name)) {
            double mean = (now[1] - then[1]) / (double) calls;
            means.put(name, Map.of("calls", calls, "mean_us", LatencyRecorder.roundTenth(mean)));
          }
        });
    return means;
  }
}
