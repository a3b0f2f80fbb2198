package io.kvindex.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** What makes a demo run fail, from its figures. Thread-safe (stateless). */
final class DemoProblems {
  private DemoProblems() {}

  /** What went wrong in the run whose figures {@code b} holds; empty when nothing did. */
  static List<String> of(DemoReport.Builder b) {
    List<String> out = new ArrayList<>();
    Auditor.Accuracy a = b.accuracy;
    // Engines that evict without publishing leave the index wrong by design: the fault run
    // reports accuracy and measures the closed loop instead.
    boolean exactExpected = b.config.fault() == DemoConfig.Fault.NONE;
    if (exactExpected && !a.wrongPods().isEmpty()) {
      out.add(
          String.format(
              Locale.ROOT,
              "index accuracy at quiescence is %.1f%% of pods, not 100%%: %s",
              100 * a.podFraction(),
              a.wrongPods()));
    }
    if (exactExpected && !a.lookups().perfect()) {
      out.add(
          String.format(
              Locale.ROOT,
              "%d of %d lookups through the routers had a wrong depth or no answer%s",
              a.lookups().sampled() - a.lookups().right(),
              a.lookups().sampled(),
              a.lookups().firstWrong() == null
                  ? ""
                  : " (first: " + a.lookups().firstWrong() + ")"));
    }
    double kv =
        b.results.stream()
            .filter(r -> r.policy().equals("kvindex"))
            .findFirst()
            .map(Run.Result::hitRate)
            .orElse(0.0);
    double rr =
        b.results.stream()
            .filter(r -> r.policy().equals("round-robin"))
            .findFirst()
            .map(Run.Result::hitRate)
            .orElse(1.0);
    if (!(kv > rr)) {
      out.add(
          String.format(
              Locale.ROOT,
              "kvindex's hit rate %.1f%% is not above round-robin's %.1f%%",
              100 * kv,
              100 * rr));
    }
    double oracle =
        b.results.stream()
            .filter(r -> r.policy().equals(Policy.ORACLE))
            .findFirst()
            .map(Run.Result::hitRate)
            .orElse(0.0);
    if (b.config.fullDefaultRun() && oracle > 0 && kv / oracle < MIN_ORACLE_RATIO) {
      out.add(
          String.format(
              Locale.ROOT,
              "kvindex's hit rate %.1f%% is %.1f%% of the oracle's %.1f%%, below %.0f%%: the index"
                  + " lost more than routing can; see the ingestion lag and the closed loop above",
              100 * kv,
              100 * kv / oracle,
              100 * oracle,
              100 * MIN_ORACLE_RATIO));
    }
    if (b.reset == null) {
      out.add("the prefix-cache reset was not injected: the run ended before it");
    } else {
      b.reset.problem(FaultsSection.clearsPurged(b)).ifPresent(out::add);
    }
    if (b.ingest.restarts() == 0) {
      out.add("the engine restart of " + b.restarted + " was not detected");
    }
    if (b.takeover == null) {
      out.add(
          "the leases of the killed " + Demo.KILLED_INGESTER + " did not move to " + Demo.SURVIVOR);
    }
    return List.copyOf(out);
  }

  /** The full default run fails below this share of the oracle's hit rate. */
  static final double MIN_ORACLE_RATIO = 0.9;
}
