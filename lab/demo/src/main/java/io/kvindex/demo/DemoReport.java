package io.kvindex.demo;

import static io.kvindex.demo.ReportText.join;
import static io.kvindex.demo.ReportText.joinInts;
import static io.kvindex.demo.ReportText.line;
import static io.kvindex.demo.ReportText.millis;

import io.kvindex.redis.RedisConnector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The demo's summary: hit rates per routing policy, index accuracy at quiescence, ingestion figures
 * and how each injected fault was handled, with the problems that make the demo fail. Immutable and
 * thread-safe.
 */
public final class DemoReport {
  private final Builder b;
  private final List<String> problems;

  private DemoReport(Builder b) {
    this.b = b;
    this.problems = DemoProblems.of(b);
  }

  static Builder builder(DemoConfig config) {
    return new Builder(config);
  }

  /** What went wrong; empty when the demo showed what it should. */
  public List<String> problems() {
    return problems;
  }

  /** 0 when there are no problems, else 1. */
  public int exitCode() {
    return problems.isEmpty() ? 0 : 1;
  }

  /** The hit rate of a policy ({@code kvindex}, {@code round-robin}, {@code random}). */
  public double hitRate(String policy) {
    return result(policy).hitRate();
  }

  /** kvindex's hit rate over the oracle's: the index's own loss (1 = none). */
  public double oracleRatio() {
    double oracle = hitRate(Policy.ORACLE);
    return oracle == 0 ? Double.NaN : hitRate(Policy.KVINDEX) / oracle;
  }

  /** Requests routed through kvindex. */
  public int routed() {
    return result(Policy.KVINDEX).routed();
  }

  /** Requests routed through kvindex that a pod refused (asleep, or too large for it). */
  public int refused() {
    return result(Policy.KVINDEX).unavailable();
  }

  /** The fraction of pods whose indexed blocks equal their true blocks at quiescence. */
  public double podAccuracy() {
    return b.accuracy.podFraction();
  }

  /** The fraction of sampled lookups whose per-pod depths were right at quiescence. */
  public double lookupAccuracy() {
    return b.accuracy.lookups().fraction();
  }

  private Run.Result result(String policy) {
    return b.result(policy);
  }

  /** The summary as printed at the end of {@code kvindex demo}. */
  public String render() {
    StringBuilder s = new StringBuilder();
    line(s, "");
    header(s);
    line(s, "");
    routing(s);
    line(s, "");
    accuracy(s);
    line(s, "");
    ClosedLoopSection.render(s, b);
    line(s, "");
    ingestion(s);
    line(s, "");
    FaultsSection.render(s, b);
    line(s, "");
    verdict(s);
    cleanup(s);
    return s.toString();
  }

  /** What closing did to a Redis the demo was given. */
  public Stack.Cleanup cleanup() {
    return b.cleanup;
  }

  /**
   * After the verdict, so that it never hides the figures: the keys deleted from a Redis the demo
   * was given, or why they could not be and the command that deletes them. Not a problem of the
   * run: the exit code stays the run's.
   */
  private void cleanup(StringBuilder s) {
    if (b.cleanup.failed()) {
      line(s, "Cleanup FAILED (the figures above stand): %s", b.cleanup.problem());
    } else if (b.cleanup.given()) {
      line(s, "Cleanup: the run's %d keys deleted from Redis", b.cleanup.keysDeleted());
    }
  }

  /** Run header: pods, requests, workload, Redis, time. */
  private void header(StringBuilder s) {
    line(
        s,
        "kvindex demo summary: %d pods, %d requests (%s), %s, %.1f s in all",
        b.config.pods(),
        result("kvindex").routed(),
        b.config.trace() == null ? "built-in multi-tenant workload" : "trace " + b.config.trace(),
        b.config.redisUri() == null
            ? "embedded Redis"
            : "Redis " + RedisConnector.masked(b.config.redisUri()),
        b.elapsed.toMillis() / 1000.0);
    pace(s);
  }

  /**
   * How fast the kvindex run went against what was offered: the gateway sends one request at a
   * time, so on a loaded machine it falls behind the offered rate, and the figures are those of the
   * rate it reached.
   */
  private void pace(StringBuilder s) {
    Run.Result k = result("kvindex");
    double seconds = k.elapsed().toNanos() / 1e9;
    double reached = seconds > 0 ? k.routed() / seconds : 0;
    boolean paced = b.config.speed() == null;
    line(
        s,
        "  routed through kvindex in %.1f s: %.0f requests/s, offered %s%s",
        seconds,
        reached,
        paced
            ? String.format(Locale.ROOT, "%.0f/s", b.config.requestsPerSecond())
            : String.format(
                Locale.ROOT, "at the trace's arrival times, %s times faster", b.config.speed()),
        paced && reached < 0.95 * b.config.requestsPerSecond()
            ? " (behind: the gateway waits for each request before it sends the next)"
            : "");
  }

  /** The hit rate of each routing policy, and how kvindex picked. */
  private void routing(StringBuilder s) {
    line(
        s, "Routing: the same requests under each policy, each on a fresh fleet of the same shape");
    line(
        s,
        "  %-12s %9s %15s %15s %9s",
        "policy",
        "requests",
        "prompt tokens",
        "cached tokens",
        "hit rate");
    for (Run.Result r : b.results) {
      line(
          s,
          "  %-12s %9d %15d %15d %8.1f%%",
          r.policy(),
          r.routed(),
          r.promptTokens(),
          r.cachedTokens(),
          100 * r.hitRate());
    }
    line(
        s,
        "  kvindex / oracle = %.1f%% (hit rate; the oracle scores from the pods' true caches with"
            + " the router's pick policy)%s",
        100 * oracleRatio(),
        b.config.fullDefaultRun()
            ? ""
            : "; not checked against 90%: only the full default run is a measurement");
    line(
        s,
        "  kvindex picks by reason: %s; %s calls failed: %d%s",
        join(b.reasons),
        b.config.via() == DemoConfig.Via.EPP ? "endpoint picker" : "router",
        b.routerFailures,
        b.lastRouterFailure == null ? "" : " (last: " + b.lastRouterFailure + ")");
    line(
        s,
        b.config.via() == DemoConfig.Via.EPP
            ? "  endpoint picker round trip (ext_proc over gRPC, full-duplex streamed: request"
                + " headers and token-id body in, the pick out): p50 %s, p99 %s"
            : "  router POST /score round trip (HTTP, JSON token ids): p50 %s, p99 %s",
        millis(b.scoreP50Millis),
        millis(b.scoreP99Millis));
    line(
        s,
        "  lookups out of budget (%d ms, answered 'index unavailable'): %d",
        Stack.LOOKUP_BUDGET.toMillis(),
        b.lookupsOutOfBudget);
    if (b.indexReads != null) {
      line(
          s,
          "  index lookups: %d; reading an overflowed segment or span as its block fields: %d;"
              + " reading every block field (unplaced blocks in the index): %d",
          b.indexReads.lookups(),
          b.indexReads.overflowReads(),
          b.indexReads.blockReads());
    }
  }

  /** Index accuracy at quiescence against the ground truth. */
  private void accuracy(StringBuilder s) {
    Auditor.Accuracy a = b.accuracy;
    line(s, "Index accuracy at quiescence, against the simulator's ground truth");
    line(
        s,
        "  pods whose indexed blocks equal their true blocks: %d/%d (%.1f%%): each of the %d"
            + " distinct blocks the pods hold looked up, each pod's entries counted",
        a.pods() - a.wrongPods().size(),
        a.pods(),
        100 * a.podFraction(),
        a.blocksChecked());
    a.wrongPods().forEach((pod, why) -> line(s, "    %s: %s", pod, why));
    Auditor.LookupAccuracy l = a.lookups();
    line(
        s,
        "  lookups through the routers whose per-pod depths are right: %d/%d (%.1f%%)%s",
        l.right(),
        l.sampled(),
        100 * l.fraction(),
        l.unavailable() == 0 ? "" : ", " + l.unavailable() + " unanswered (index unavailable)");
    if (l.firstWrong() != null) {
      line(s, "    first wrong: %s", l.firstWrong());
    }
  }

  /** Ingest rate, lag and leases. */
  private void ingestion(StringBuilder s) {
    IngestStats i = b.ingest;
    double seconds = Math.max(0.001, result("kvindex").elapsed().toMillis() / 1000.0);
    line(
        s, "Ingestion: %d ingester replicas, each with its own Redis connections", Stack.INGESTERS);
    line(
        s,
        "  %d events (%.0f/s), %d blocks stored or removed (%.0f/s) during the kvindex run",
        i.events(),
        i.events() / seconds,
        i.blocks(),
        i.blocks() / seconds);
    line(
        s,
        "  lag from event timestamp to applied in Redis: p50 %s, p99 %s over the run (the"
            + " streams of the killed replica wait out the lease TTL); p50 %s, p99 %s before the"
            + " kill",
        millis(i.lagP50Millis()),
        millis(i.lagP99Millis()),
        b.beforeKill == null ? "-" : millis(b.beforeKill.lagP50Millis()),
        b.beforeKill == null ? "-" : millis(b.beforeKill.lagP99Millis()));
    line(
        s,
        "  leases: before the kill %s; at the end %s; lease moves %s",
        b.beforeKill == null ? "-" : joinInts(b.beforeKill.leasesHeld()),
        joinInts(i.leasesHeld()),
        join(i.leaseMoves()));
  }

  /** The verdict, with what went wrong. */
  private void verdict(StringBuilder s) {
    if (problems.isEmpty()) {
      line(
          s,
          "Result: OK (%s, kvindex hit rate %.1f%% vs round-robin %.1f%%, %.1f%% of the oracle's)",
          b.config.fault() == DemoConfig.Fault.NONE
              ? "index accuracy 100%"
              : "fault run: the index is wrong by design",
          100 * hitRate("kvindex"),
          100 * hitRate("round-robin"),
          100 * oracleRatio());
    } else {
      line(s, "Result: FAILED");
      problems.forEach(p -> line(s, "  - %s", p));
    }
  }

  /** Collects the figures as the demo goes. Not thread-safe. */
  static final class Builder {
    final DemoConfig config;
    final List<Run.Result> results = new ArrayList<>();
    Map<String, Integer> reasons = Map.of();
    int routerFailures;
    String lastRouterFailure;
    Auditor.Accuracy accuracy;
    IngestStats ingest;
    IngestStats beforeKill;
    Duration takeover;
    Duration elapsed = Duration.ZERO;
    double scoreP50Millis = Double.NaN;
    double scoreP99Millis = Double.NaN;
    Stack.IndexReads indexReads;
    long lookupsOutOfBudget;
    Gateway gateway;
    int observeFailures;
    Map<String, Long> suspects = Map.of();
    Map<String, Long> resyncs = Map.of();
    Stack.Cleanup cleanup = Stack.Cleanup.NONE;
    PrefixCacheReset reset;
    String restarted = Demo.RESTART_POD;

    private Builder(DemoConfig config) {
      this.config = config;
    }

    Builder result(Run.Result r) {
      results.add(r);
      return this;
    }

    Builder scoreLatency(double p50Millis, double p99Millis) {
      this.scoreP50Millis = p50Millis;
      this.scoreP99Millis = p99Millis;
      return this;
    }

    Builder lookupsOutOfBudget(long n) {
      this.lookupsOutOfBudget = n;
      return this;
    }

    Builder loop(Gateway gateway, Map<String, Long> suspects, Map<String, Long> resyncs) {
      this.gateway = gateway;
      this.observeFailures = gateway.observeFailures();
      this.suspects = Map.copyOf(suspects);
      this.resyncs = Map.copyOf(resyncs);
      return this;
    }

    Run.Result result(String policy) {
      return results.stream()
          .filter(r -> r.policy().equals(policy))
          .findFirst()
          .orElseThrow(() -> new IllegalArgumentException("no run of policy " + policy));
    }

    RouterPolicy.Predictions predictions(int from, int to) {
      return gateway == null
          ? new RouterPolicy.Predictions(0, 0, 0)
          : gateway.predictions(from, to);
    }

    Builder indexReads(Stack.IndexReads reads) {
      this.indexReads = reads;
      return this;
    }

    Builder routing(Map<String, Integer> reasons, int failures, String lastFailure) {
      this.reasons = new java.util.TreeMap<>(reasons);
      this.routerFailures = failures;
      this.lastRouterFailure = lastFailure;
      return this;
    }

    Builder accuracy(Auditor.Accuracy accuracy) {
      this.accuracy = accuracy;
      return this;
    }

    /** The midway reset, or {@code null} if the run ended before it. */
    Builder reset(PrefixCacheReset reset) {
      this.reset = reset;
      return this;
    }

    /** The pod whose engine the demo restarted. */
    Builder restarted(String pod) {
      this.restarted = pod;
      return this;
    }

    Builder ingest(IngestStats ingest) {
      this.ingest = ingest;
      return this;
    }

    Builder ingestBeforeKill(IngestStats stats) {
      this.beforeKill = stats;
      return this;
    }

    Builder cleanup(Stack.Cleanup cleanup) {
      this.cleanup = Objects.requireNonNull(cleanup, "cleanup");
      return this;
    }

    Builder takeover(Duration takeover) {
      this.takeover = takeover;
      return this;
    }

    Builder elapsed(Duration elapsed) {
      this.elapsed = elapsed;
      return this;
    }

    DemoReport build() {
      Objects.requireNonNull(accuracy, "accuracy");
      Objects.requireNonNull(ingest, "ingest");
      return new DemoReport(this);
    }
  }
}
