package io.kvindex.demo;

import io.kvindex.router.KvRouter;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.TtftCostModel;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.engine.EngineTiming;
import io.kvindex.simulator.load.TimedRequest;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.PrintWriter;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Routing measured in time to first token: the same requests at the same arrival times on engines
 * that take time ({@link TimedRun}), each policy on a fresh fleet: kvindex through the whole stack
 * with 1 or more gateways (each embedding its own router, all sharing one index and the index's
 * shared load view; or, with {@code --gateway-load scaled|own}, each sending a router replica its
 * own view of load; paced against the wall clock, as the index follows the engines' events in real
 * time), per-gateway approximate prefix routing, least-loaded (true queues), round-robin, random,
 * and the oracle (true caches, queues and queued prompt tokens, kvindex's pick policy); kvindex and
 * the oracle once per pick policy asked for. The short table ({@link Options#full} false) runs
 * kvindex with one gateway, the oracle, least-loaded and round-robin. The built-in workload's
 * arrivals are rescaled to {@code load} of the fleet's capacity; a trace keeps its own times
 * (compressed by {@code --speed}). Not thread-safe: one run at a time.
 */
final class TtftComparison {
  /** What the comparison runs. */
  record Options(
      List<Integer> gateways,
      double load,
      int requests,
      EngineTiming timing,
      String gatewayLoad,
      List<String> pickPolicies,
      boolean full) {}

  /** One policy's row. */
  record Row(String policy, TimedRun.Result result) {}

  private final DemoConfig config;
  private final Options options;
  private final Progress progress;
  private final PrintWriter out;
  private final List<InferenceRequest> requests;
  private final double[] arrivals;
  private final int capacityBlocks;
  private final double capacity;
  private final double offered;

  TtftComparison(DemoConfig config, Options options, PrintWriter out) {
    this.config = config;
    this.options = options;
    this.out = out;
    this.progress = new Progress(out);
    List<TimedRequest> timed = Workloads.requests(config);
    timed = timed.subList(0, Math.min(options.requests(), timed.size()));
    this.requests = timed.stream().map(TimedRequest::request).toList();
    this.capacityBlocks = Workloads.capacityBlocks(config, requests);
    double work = 0;
    for (InferenceRequest r : requests) {
      work += options.timing().requestSeconds(r.promptLength(), r.outputLength());
    }
    this.capacity = config.pods() / (work / requests.size());
    this.arrivals = new double[requests.size()];
    double last = timed.get(timed.size() - 1).at().toNanos() / 1e9;
    double stretch;
    if (config.trace() != null && config.speed() != null) {
      stretch = 1 / config.speed();
    } else {
      double rate = options.load() * capacity;
      stretch = last <= 0 ? 0 : (requests.size() / rate) / last;
    }
    for (int i = 0; i < requests.size(); i++) {
      arrivals[i] = timed.get(i).at().toNanos() / 1e9 * stretch;
    }
    double span = arrivals[arrivals.length - 1];
    this.offered = span <= 0 ? Double.POSITIVE_INFINITY : requests.size() / span;
  }

  /** Runs every policy and returns the rows, kvindex's first. */
  List<Row> run() throws InterruptedException {
    progress.line(
        String.format(
            Locale.ROOT,
            "TTFT comparison: %d requests over %.0f s at %.1f req/s, %.0f %% of the fleet's capacity"
                + " of %.1f req/s (no prefix hits; cost model %s)",
            requests.size(),
            arrivals[arrivals.length - 1],
            offered,
            100 * offered / capacity,
            capacity,
            options.timing()));
    List<Row> rows = new ArrayList<>();
    boolean both = options.pickPolicies().size() > 1;
    for (String name : options.pickPolicies()) {
      String label = both ? ", " + name : "";
      for (int g : options.gateways()) {
        rows.add(new Row((g == 1 ? "kvindex" : "kvindex x" + g) + label, kvindex(g, policy(name))));
      }
    }
    for (String name : options.pickPolicies()) {
      rows.add(
          new Row(
              "oracle" + (both ? ", " + name : ""),
              baseline("oracle (" + name + ")", TimedPolicies.oracle(policy(name)))));
    }
    if (options.full()) {
      int most = options.gateways().stream().mapToInt(Integer::intValue).max().orElse(1);
      for (int g : most == 1 ? List.of(1) : List.of(1, most)) {
        rows.add(
            new Row(
                g == 1 ? "approx-prefix" : "approx-prefix x" + g,
                baseline(
                    "approximate prefix (" + g + " gateways)",
                    TimedPolicies.approximatePrefix(g, capacityBlocks, 0.5, 32, 1.5),
                    g)));
      }
    }
    rows.add(new Row("least-loaded", baseline("least-loaded", TimedPolicies.leastLoaded())));
    rows.add(new Row("round-robin", baseline("round-robin", TimedPolicies.roundRobin())));
    if (options.full()) {
      rows.add(new Row("random", baseline("random", TimedPolicies.random(config.seed()))));
    }
    return rows;
  }

  /** A pick policy by its setting's name, with the router's defaults. */
  static PickPolicy policy(String name) {
    return PickPolicy.named(
        name,
        PickPolicy.DEFAULT_IMBALANCE_ABSOLUTE,
        PickPolicy.DEFAULT_IMBALANCE_RATIO,
        TtftCostModel.DEFAULT);
  }

  private TimedRun.Result kvindex(int gateways, PickPolicy policy) throws InterruptedException {
    boolean scaleLoad = options.gatewayLoad().equals("scaled");
    boolean shared = options.gatewayLoad().equals("shared");
    progress.line(
        "kvindex in time: "
            + gateways
            + " gateway(s), "
            + (shared
                ? "each embedding a router with the index's shared load view"
                : "each sending a router replica its " + options.gatewayLoad() + " load")
            + ", paced against the wall clock");
    try (Stack stack = Stack.start(config, capacityBlocks, policy)) {
      Map<String, MeterRegistry> registries = new LinkedHashMap<>();
      stack.ingesters().forEach((name, i) -> registries.put(name, i.meterRegistry()));
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (IngestStats.read(registries, registries).leasedStreams() < config.pods()) {
        if (System.nanoTime() > deadline) {
          throw new DemoException(
              "gave up after 20 s: the ingesters lease only "
                  + IngestStats.read(registries, registries).leasesHeld()
                  + " streams");
        }
        Thread.sleep(50);
      }
      TimedRun.Picker picker;
      if (shared) {
        List<KvRouter> embedded = new ArrayList<>();
        for (int g = 0; g < gateways; g++) {
          embedded.add(stack.embeddedRouter("gateway-" + g));
        }
        picker = TimedPolicies.embedded(embedded);
      } else {
        List<URI> routers = stack.routers();
        List<RouterPolicy> policies = new ArrayList<>();
        for (int g = 0; g < gateways; g++) {
          List<URI> own = new ArrayList<>(routers);
          java.util.Collections.rotate(own, -g);
          policies.add(
              new RouterPolicy(own, stack.fleet().names(), true)
                  .gateways(scaleLoad ? gateways : 1));
        }
        picker = TimedPolicies.kvindex(policies);
      }
      return new TimedRun(requests, arrivals, stack.fleet(), options.timing(), gateways, picker)
          .paced(1.0)
          .execute();
    }
  }

  private TimedRun.Result baseline(String name, TimedRun.Picker picker) {
    return baseline(name, picker, 1);
  }

  private TimedRun.Result baseline(String name, TimedRun.Picker picker, int gateways) {
    try (Fleet fleet = Fleet.start(config, capacityBlocks, false)) {
      progress.line("the same requests in time with " + name + " routing on a fresh fleet");
      return new TimedRun(requests, arrivals, fleet, options.timing(), gateways, picker).execute();
    }
  }

  /** The table: one row per policy. */
  String render(List<Row> rows) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "%nTime to first token (%d pods, %d requests at %.1f req/s = %.0f %% of capacity)%n",
            config.pods(),
            requests.size(),
            offered,
            100 * offered / capacity,
            capacity));
    b.append(
        String.format(
            Locale.ROOT,
            "  %-28s %8s %8s %8s %8s %8s %8s %9s %6s %6s %7s%n",
            "policy",
            "TTFT p50",
            "p90",
            "p99",
            "e2e p50",
            "p99",
            "req/s",
            "prompt/s",
            "hits",
            "spread",
            "preempt"));
    for (Row row : rows) {
      TimedRun.Result r = row.result();
      b.append(
          String.format(
              Locale.ROOT,
              "  %-28s %7.3fs %7.3fs %7.3fs %7.2fs %7.2fs %8.1f %9.0f %5.1f%% %6.2f %7d%n",
              row.policy(),
              r.ttft(0.5),
              r.ttft(0.9),
              r.ttft(0.99),
              r.endToEnd(0.5),
              r.endToEnd(0.99),
              r.requestsPerSecond(),
              r.promptTokensPerSecond(),
              100 * r.hitRate(),
              r.loadSpread(),
              r.preemptions()));
    }
    b.append(
        "  spread: the busiest pod's requests over the mean; TTFT and e2e in simulated seconds\n");
    for (Row row : rows) {
      TimedRun.Result r = row.result();
      if (!Double.isNaN(r.maxLateSeconds())) {
        b.append(
            String.format(
                Locale.ROOT,
                "  %s: this machine was at most %.3f s behind the simulated clock (%.1f %% of"
                    + " events over %.2f s late; over 1 %% would mean this machine set the pace)%s%n",
                row.policy(),
                r.maxLateSeconds(),
                100 * r.lateShare(),
                TimedRun.BEHIND_SECONDS,
                r.machineBound()
                    ? ": the machine running the simulation, not the simulated fleet, set the"
                        + " pace; its figures are pessimistic"
                    : ""));
      }
      if (!r.reasons().isEmpty()) {
        b.append("  ").append(row.policy()).append(" picks by reason: ").append(r.reasons());
        b.append('\n');
      }
    }
    return b.toString();
  }
}
