package io.kvindex.demo;

import static io.kvindex.demo.ReportText.line;

import java.util.Locale;
import java.util.Map;

/**
 * The demo summary's faults section: the faults injected midway and how each was handled, with the
 * silent-eviction fault's figures before, after and once settled. Thread-safe (stateless).
 */
final class FaultsSection {
  private FaultsSection() {}

  /** The faults injected midway and how each was handled. */
  static void render(StringBuilder s, DemoReport.Builder b) {
    line(s, "Faults injected midway, and how each was handled");
    Map<String, Integer> fired = b.result("kvindex").fired();
    line(
        s,
        "  %s",
        b.reset == null
            ? "reset: not injected, the run ended before it"
            : b.reset.describe(clearsPurged(b)));
    line(
        s,
        "  restarted %s's engine (before request %s): %s",
        b.restarted,
        fired.getOrDefault(Demo.RESTART, -1),
        restartOutcome(b));
    line(
        s,
        "  killed %s (before request %s): %s",
        Demo.KILLED_INGESTER,
        fired.getOrDefault(Demo.KILL, -1),
        killOutcome(b));
    if (b.config.fault() == DemoConfig.Fault.SILENT_EVICTION) {
      silentEviction(s, b, fired.getOrDefault(Demo.FAULT, Integer.MAX_VALUE));
    }
  }

  /** The silent-eviction fault: the two figures before it, after it, and in the last stretch. */
  private static void silentEviction(StringBuilder s, DemoReport.Builder b, int at) {
    Run.Result kv = b.result(Policy.KVINDEX);
    Run.Result oracle = b.result(Policy.ORACLE);
    int tail = tailStart(kv.routed(), at);
    line(
        s,
        "  silent eviction in every engine from request %d, closed loop %s:",
        at,
        b.config.closedLoop() ? "on" : "off");
    line(s, "    %-28s %16s %18s", "", "kvindex / oracle", "exact predictions");
    double ratioBefore = ratio(kv.hitRateBefore(at), oracle.hitRateBefore(at));
    RouterPolicy.Predictions predictedBefore = b.predictions(0, at);
    phase(s, "before the fault", ratioBefore, predictedBefore);
    phase(
        s,
        "after the fault",
        ratio(kv.hitRateFrom(at), oracle.hitRateFrom(at)),
        b.predictions(at, Integer.MAX_VALUE));
    Integer settled = kv.fired().get(Demo.SETTLED);
    double ratioSettled = Double.NaN;
    RouterPolicy.Predictions predictedSettled = null;
    if (settled != null) {
      ratioSettled = ratio(kv.hitRateFrom(settled), oracle.hitRateFrom(settled));
      predictedSettled = b.predictions(settled, Integer.MAX_VALUE);
      phase(
          s,
          "from " + Demo.SETTLE.toSeconds() + " s after the fault",
          ratioSettled,
          predictedSettled);
    }
    phase(
        s,
        "last quarter of the run",
        ratio(kv.hitRateFrom(tail), oracle.hitRateFrom(tail)),
        b.predictions(tail, Integer.MAX_VALUE));
    if (settled == null) {
      line(
          s,
          "    the run ends within %d s of the fault: run longer (--duration) to see it settle",
          Demo.SETTLE.toSeconds());
      return;
    }
    double ratioDrop = 100 * (ratioBefore - ratioSettled);
    double exactDrop = 100 * (predictedBefore.exactShare() - predictedSettled.exactShare());
    boolean within = ratioDrop <= SETTLED_POINTS && exactDrop <= SETTLED_POINTS;
    line(
        s,
        "    from %d s after the fault, below the fault-free figures by %.1f points (kvindex /"
            + " oracle) and %.1f points (exact predictions): %swithin %d points",
        Demo.SETTLE.toSeconds(),
        ratioDrop,
        exactDrop,
        within ? "" : "not ",
        (int) SETTLED_POINTS);
  }

  /** How close to the fault-free figures the closed loop brings a fault run back. */
  static final double SETTLED_POINTS = 3;

  private static int tailStart(int routed, int at) {
    return Math.max(at, routed - routed / 4);
  }

  private static double ratio(double kv, double oracle) {
    return oracle == 0 ? Double.NaN : kv / oracle;
  }

  private static void phase(
      StringBuilder s, String name, double ratio, RouterPolicy.Predictions p) {
    line(s, "    %-28s %15.1f%% %17.1f%%", name, 100 * ratio, 100 * p.exactShare());
  }

  static long clearsPurged(DemoReport.Builder b) {
    return b.ingest.purges().getOrDefault("all_blocks_cleared", 0L);
  }

  private static String restartOutcome(DemoReport.Builder b) {
    return b.ingest.restarts() > 0
        ? "handled: " + b.ingest.restarts() + " engine restart(s) detected and the pod purged"
        : "NOT handled: no engine restart was detected";
  }

  private static String killOutcome(DemoReport.Builder b) {
    if (b.takeover == null) {
      return "NOT handled: " + Demo.SURVIVOR + " did not take over every stream within 30 s";
    }
    int moved =
        b.beforeKill == null ? 0 : b.beforeKill.leasesHeld().getOrDefault(Demo.KILLED_INGESTER, 0);
    return String.format(
        Locale.ROOT,
        "handled: its %d leases moved to %s, which held all %d streams %.1f s after the kill"
            + " (lease TTL %d s)",
        moved,
        Demo.SURVIVOR,
        b.config.pods(),
        b.takeover.toMillis() / 1000.0,
        Stack.LEASE_TTL.toSeconds());
  }
}
