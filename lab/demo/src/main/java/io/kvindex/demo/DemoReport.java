package io.kvindex.demo;

import io.kvindex.redis.RedisConnector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

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
    this.problems = findProblems(b);
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
    return b.results.stream()
        .filter(r -> r.policy().equals(policy))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no run of policy " + policy));
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
    closedLoop(s);
    line(s, "");
    ingestion(s);
    line(s, "");
    faults(s);
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

  /** Predicted against what the engines reported, and what the routers made of it. */
  private void closedLoop(StringBuilder s) {
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
    int first = firstFault();
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
  private int firstFault() {
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

  /** The faults injected midway and how each was handled. */
  private void faults(StringBuilder s) {
    line(s, "Faults injected midway, and how each was handled");
    Map<String, Integer> fired = result("kvindex").fired();
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
        restartOutcome());
    line(
        s,
        "  killed %s (before request %s): %s",
        Demo.KILLED_INGESTER,
        fired.getOrDefault(Demo.KILL, -1),
        killOutcome());
    if (b.config.fault() == DemoConfig.Fault.SILENT_EVICTION) {
      silentEviction(s, fired.getOrDefault(Demo.FAULT, Integer.MAX_VALUE));
    }
  }

  /** The silent-eviction fault: the two figures before it, after it, and in the last stretch. */
  private void silentEviction(StringBuilder s, int at) {
    Run.Result kv = result(Policy.KVINDEX);
    Run.Result oracle = result(Policy.ORACLE);
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

  private static long clearsPurged(Builder b) {
    return b.ingest.purges().getOrDefault("all_blocks_cleared", 0L);
  }

  private String restartOutcome() {
    return b.ingest.restarts() > 0
        ? "handled: " + b.ingest.restarts() + " engine restart(s) detected and the pod purged"
        : "NOT handled: no engine restart was detected";
  }

  private String killOutcome() {
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

  private static List<String> findProblems(Builder b) {
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
      b.reset.problem(clearsPurged(b)).ifPresent(out::add);
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

  static String millis(double ms) {
    if (Double.isNaN(ms)) {
      return "-";
    }
    if (Double.isInfinite(ms)) {
      return "> 60 s";
    }
    return String.format(Locale.ROOT, ms < 10 ? "%.1f ms" : "%.0f ms", ms);
  }

  private static String join(Map<String, ? extends Number> counts) {
    if (counts.isEmpty()) {
      return "none";
    }
    return counts.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(" "));
  }

  private static String joinInts(Map<String, Integer> counts) {
    return join(counts);
  }

  private static void line(StringBuilder s, String format, Object... args) {
    s.append(String.format(Locale.ROOT, format, args)).append('\n');
  }

  /** Collects the figures as the demo goes. Not thread-safe. */
  static final class Builder {
    private final DemoConfig config;
    private final List<Run.Result> results = new ArrayList<>();
    private Map<String, Integer> reasons = Map.of();
    private int routerFailures;
    private String lastRouterFailure;
    private Auditor.Accuracy accuracy;
    private IngestStats ingest;
    private IngestStats beforeKill;
    private Duration takeover;
    private Duration elapsed = Duration.ZERO;
    private double scoreP50Millis = Double.NaN;
    private double scoreP99Millis = Double.NaN;
    private Stack.IndexReads indexReads;
    private long lookupsOutOfBudget;
    private Gateway gateway;
    private int observeFailures;
    private Map<String, Long> suspects = Map.of();
    private Map<String, Long> resyncs = Map.of();
    private Stack.Cleanup cleanup = Stack.Cleanup.NONE;
    private PrefixCacheReset reset;
    private String restarted = Demo.RESTART_POD;

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
