package io.kvindex.simulator;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * What {@code kvindex sim} prints: each pod's endpoints at the start, then the fleet's hit-rate
 * line periodically and at the end. Thread-safe (stateless); callers serialize their writer's use.
 */
final class SimOutput {
  private SimOutput() {}

  static void printEndpoints(SimulatedFleet fleet, PrintWriter out) {
    for (SimulatedPod pod : fleet.pods()) {
      for (StreamEndpoints e : pod.endpoints()) {
        out.printf(
            Locale.ROOT,
            "%s rank=%d model=%s pub=%s replay=%s http=%s topic=\"%s\"%n",
            pod.name(),
            e.rank(),
            pod.model(),
            e.publish(),
            e.replay(),
            pod.httpAddress(),
            e.topic());
      }
    }
    out.flush();
  }

  static void report(PrintWriter out, long start, FleetStats stats) {
    out.println(line(start, stats));
    out.flush();
  }

  static String line(long start, FleetStats s) {
    return String.format(
        Locale.ROOT,
        "t=%.1fs requests=%d failed=%d prompt_tokens=%d cached_tokens=%d hit_rate=%.4f",
        (System.nanoTime() - start) / 1e9,
        s.requests(),
        s.failed(),
        s.promptTokens(),
        s.cachedTokens(),
        s.hitRate());
  }
}
