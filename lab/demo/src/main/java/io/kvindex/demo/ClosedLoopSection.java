package io.kvindex.demo;

import static io.kvindex.demo.ReportText.join;
import static io.kvindex.demo.ReportText.line;

import java.util.List;
import java.util.Map;

/**
 * The demo summary's closed-loop section: predicted against what the engines reported, and what the
 * routers made of it. Thread-safe (stateless).
 */
final class ClosedLoopSection {
  private ClosedLoopSection() {}

  /** Predicted against what the engines reported, and what the routers made of it. */
  static void render(StringBuilder s, DemoReport.Builder b) {
    RouterPolicy.Predictions all = b.predictions(0, Integer.MAX_VALUE);
    line(
        s,
        "Closed loop: every engine's cached_tokens %s; resyncs %s",
        b.config.via() == DemoConfig.Via.EPP
            ? "read from its response by the endpoint picker"
            : "sent back to a router (POST /observe)",
        b.config.closedLoop()
            ? "on (every "
                + Stack.RESYNC_INTERVAL.toSeconds()
                + " s at most per pod; a resynced pod's ingester infers its engine's evictions)"
            : "off (observations counted, suspects reported, no pod resynced)");
    line(
        s,
        "  %d requests observed: %d exact (%.1f%%), %d over-predicted, %d under-predicted;"
            + " %s: %d",
        all.observed(),
        all.exact(),
        100 * all.exactShare(),
        all.over(),
        all.under(),
        b.config.via() == DemoConfig.Via.EPP ? "responses not observed" : "observe calls failed",
        b.observeFailures);
    int first = firstFault(b);
    if (first < Integer.MAX_VALUE) {
      RouterPolicy.Predictions before = b.predictions(0, first);
      line(
          s,
          "  before the first fault (request %d): %d exact of %d (%.1f%%), %d over-predicted, %d"
              + " under-predicted",
          first,
          before.exact(),
          before.observed(),
          100 * before.exactShare(),
          before.over(),
          before.under());
    }
    line(
        s,
        "  pods judged drifted %s; resync requests %s; drift purges by the ingesters: %d",
        join(b.suspects),
        join(b.resyncs),
        b.ingest.purges().getOrDefault("drift", 0L));
    Map<String, Long> inferred = b.ingest.inference();
    line(
        s,
        "  evictions inferred: %d streams began on a resync, %d on a takeover; their models"
            + " removed %d blocks and listed %d again",
        inferred.getOrDefault("resync", 0L),
        inferred.getOrDefault("takeover", 0L),
        inferred.getOrDefault("evicted", 0L),
        inferred.getOrDefault("restored", 0L));
  }

  /** The request before which the run's first fault was injected, or MAX_VALUE when none was. */
  private static int firstFault(DemoReport.Builder b) {
    int first = Integer.MAX_VALUE;
    for (Run.Result r : b.results) {
      if (r.policy().equals(Policy.KVINDEX)) {
        for (String fault : List.of(Demo.RESET, Demo.RESTART, Demo.KILL, Demo.FAULT)) {
          first = Math.min(first, r.fired().getOrDefault(fault, Integer.MAX_VALUE));
        }
      }
    }
    return first;
  }
}
