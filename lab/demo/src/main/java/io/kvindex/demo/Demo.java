package io.kvindex.demo;

import io.kvindex.ingester.Ingester;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * The whole stack on one machine, and what it gained: replays one workload through kvindex routing
 * (Redis, simulated pods, two ingesters, two routers; the gateway sends each engine's cached_tokens
 * back, closing the loop) and through the oracle (the pods' true caches), round-robin and random
 * routing on fresh fleets of the same shape; midway resets the prefix cache of the pod holding the
 * most blocks, restarts another pod's engine and kills one ingester; then audits the index against
 * the pods' ground truth at quiescence.
 *
 * <pre>{@code
 * DemoReport report = Demo.run(DemoConfig.builder().pods(4).build(), new PrintWriter(System.out));
 * System.out.print(report.render());
 * }</pre>
 *
 * <p>Thread-safe: each call runs its own stack and cleans it up before it returns.
 */
public final class Demo {
  static final String RESTART_POD = "pod-2";
  static final String KILLED_INGESTER = "ingester-2";
  static final String SURVIVOR = "ingester-1";
  private static final String NODELAY = "sun.net.httpserver.nodelay";
  private static final Duration QUIESCENCE_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration AUDIT_TIMEOUT = Duration.ofSeconds(15);

  private final DemoConfig config;
  private final Progress progress;
  private final List<InferenceRequest> requests;
  private final List<Duration> arrivals;
  private final int capacityBlocks;
  private final Map<String, MeterRegistry> registries = new LinkedHashMap<>();
  static final String RESET = "reset";
  static final String RESTART = "restart";
  static final String KILL = "kill";
  static final String FAULT = "fault";
  static final String SETTLED = "settled";
  private static final double FAULT_AT = 0.25;

  /** Where in the routing the midway faults come, as fractions of its length. */
  static final double RESET_AT = 0.4;

  static final double RESTART_AT = 0.5;
  public static final double KILL_AT = 0.6;

  /** How long after the fault the closed loop has to bring the figures back (the goal). */
  static final Duration SETTLE = Duration.ofSeconds(30);

  private volatile Duration takeover;
  private Run.Result kvindexRun;
  private IngestStats beforeKill;
  private PrefixCacheReset reset;
  private String restarted = RESTART_POD;

  private final Observer observer;

  /**
   * What a caller adds to a run: the chaos scenario that runs the demo attaches its auditor and its
   * fault here. Called on the demo's thread; the default methods do nothing.
   */
  public interface Observer {
    /** No additions. */
    Observer NONE = new Observer() {};

    /**
     * The stack is up and every stream leased; {@code run}, {@code length} long, is about to route
     * through kvindex: add timed actions to it here.
     */
    default void routing(Stack stack, Run run, Duration length) {}

    /** The index has caught up with every pod; the stack is still up, the audit still to come. */
    default void quiesced(Stack stack) {}
  }

  private Demo(DemoConfig config, PrintWriter out, Observer observer) {
    this.config = config;
    this.observer = observer;
    this.progress = new Progress(out);
    List<io.kvindex.simulator.load.TimedRequest> timed = Workloads.requests(config);
    this.requests = timed.stream().map(io.kvindex.simulator.load.TimedRequest::request).toList();
    this.arrivals = timed.stream().map(io.kvindex.simulator.load.TimedRequest::at).toList();
    this.capacityBlocks = Workloads.capacityBlocks(config, requests);
  }

  /**
   * Runs the demo, writing progress to {@code out}, and returns its summary.
   *
   * @throws io.kvindex.common.KvIndexException if Redis cannot be reached
   */
  public static DemoReport run(DemoConfig config, PrintWriter out) throws InterruptedException {
    return run(config, out, Observer.NONE);
  }

  /** As {@link #run(DemoConfig, PrintWriter)}, with {@code observer} told of the run's steps. */
  public static DemoReport run(DemoConfig config, PrintWriter out, Observer observer)
      throws InterruptedException {
    // The JDK's HTTP server otherwise leaves Nagle's algorithm on: each /score answer then waits
    // for the client's delayed ACK (about 40 ms). Read once, when the first server starts.
    if (System.getProperty(NODELAY) == null) {
      System.setProperty(NODELAY, "true");
    }
    return new Demo(config, out, observer).run();
  }

  private DemoReport run() throws InterruptedException {
    long start = System.nanoTime();
    DemoReport.Builder report = DemoReport.builder(config);
    Stack stack = Stack.start(config, capacityBlocks);
    try (stack) {
      progress.line(
          "kvindex demo: Redis "
              + stack.redisUri()
              + ", index '"
              + stack.indexName()
              + "', "
              + config.pods()
              + " simulated pods, "
              + Stack.INGESTERS
              + " ingesters, "
              + Stack.ROUTERS
              + " routers "
              + stack.routers());
      stack.ingesters().forEach((name, i) -> registries.put(name, i.meterRegistry()));
      awaitLeases(stack);
      routeThroughKvindex(stack, report);
      report.reset(reset).restarted(restarted);
      quiesce(stack);
      if (reset != null && reset.probed()) {
        awaitClearCounted(stack);
      }
      observer.quiesced(stack);
      report.ingest(stats(stack));
      report.accuracy(audit(stack));
    }
    report.cleanup(stack.cleanup()).ingestBeforeKill(beforeKill).takeover(takeover);
    for (String baseline : List.of(Policy.ORACLE, Policy.ROUND_ROBIN, Policy.RANDOM)) {
      report.result(baseline(baseline));
    }
    return report.elapsed(Duration.ofNanos(System.nanoTime() - start)).build();
  }

  private void awaitLeases(Stack stack) throws InterruptedException {
    progress.line("waiting for the ingesters to lease all " + config.pods() + " streams");
    await(
        Duration.ofSeconds(20),
        () -> stats(stack).leasedStreams() >= config.pods(),
        () -> "the ingesters lease only " + stats(stack).leasesHeld() + " streams");
  }

  private void routeThroughKvindex(Stack stack, DemoReport.Builder report)
      throws InterruptedException {
    if (config.via() == DemoConfig.Via.EPP) {
      progress.line(
          "the gateway goes through "
              + stack.pickers().size()
              + " endpoint pickers "
              + stack.pickers()
              + " over Envoy's external processing protocol");
      try (PickerGateway gateway = pickerGateway(stack)) {
        routeThroughKvindex(stack, report, gateway);
      }
    } else {
      routeThroughKvindex(stack, report, new RouterPolicy(stack.routers(), stack.fleet().names()));
    }
  }

  private static PickerGateway pickerGateway(Stack stack) {
    Map<String, String> pods = new LinkedHashMap<>();
    stack.endpoints().forEach(e -> pods.put(e.address(), e.pod()));
    return new PickerGateway(
        stack.pickers(),
        pods,
        Workloads.MODEL,
        () -> {
          Map<String, Long> by = stack.countedBy("kvindex.router.predictions", "outcome");
          return new long[] {
            by.getOrDefault("exact", 0L), by.getOrDefault("over", 0L), by.getOrDefault("under", 0L)
          };
        },
        () -> stack.countedBy("kvindex.epp.picks", "reason"));
  }

  private void routeThroughKvindex(Stack stack, DemoReport.Builder report, Gateway router)
      throws InterruptedException {
    Fleet fleet = stack.fleet();
    Run run = new Run(requests, fleet, new Policy(Policy.KVINDEX, router));
    Duration length;
    if (config.trace() == null) {
      length = config.duration();
      run.pace(config.requestsPerSecond()).limit(length);
    } else if (config.speed() != null) {
      length =
          Duration.ofNanos((long) (arrivals.get(arrivals.size() - 1).toNanos() / config.speed()));
      run.arrivals(arrivals, config.speed()).span(length);
    } else {
      length = Duration.ofMillis((long) (requests.size() * 1000 / config.requestsPerSecond()));
      run.pace(config.requestsPerSecond()).span(length);
    }
    if (config.fault() == DemoConfig.Fault.SILENT_EVICTION) {
      run.atFractionOfLimit(FAULT_AT, FAULT, () -> silentEviction(fleet));
      double settled = FAULT_AT + (double) SETTLE.toNanos() / length.toNanos();
      if (settled < 1) {
        run.atFractionOfLimit(settled, SETTLED, () -> {});
      }
    }
    run.atFractionOfLimit(RESET_AT, RESET, () -> reset(fleet, stack))
        .atFractionOfLimit(RESTART_AT, RESTART, () -> restart(fleet))
        .atFractionOfLimit(KILL_AT, KILL, () -> kill(stack))
        .onProgress(r -> progress.update(r, stats(stack)));
    observer.routing(stack, run, length);
    Run.Result result = run.execute();
    kvindexRun = result;
    progress.done(result);
    if (reset != null) {
      reset.afterRun(
          result.fired().get(RESET),
          fleet,
          router,
          new RouterClient(stack.routers()),
          requests,
          stack.auditInspector());
      reset.probe().ifPresent(progress::line);
    }
    report
        .result(result)
        .routing(router.reasons(), router.failures(), router.lastFailure())
        .scoreLatency(router.roundTripMillis(0.5), router.roundTripMillis(0.99))
        .indexReads(stack.indexReads())
        .lookupsOutOfBudget(stack.lookupsOutOfBudget())
        .loop(
            router,
            stack.countedBy("kvindex.router.drift.suspects", "direction"),
            stack.countedBy("kvindex.router.resync.requests", "outcome"));
  }

  /** Every engine evicts without publishing from now on. */
  private void silentEviction(Fleet fleet) {
    fleet.pods().forEach(p -> p.faults().silentEviction(true));
    progress.line("every engine now evicts without publishing BlockRemoved (silent eviction)");
  }

  private void reset(Fleet fleet, Stack stack) {
    reset = PrefixCacheReset.fire(fleet, stack.auditInspector());
    progress.line(
        "reset "
            + reset.pod()
            + "'s prefix cache, which held "
            + reset.heldBlocks()
            + " blocks; its AllBlocksCleared goes out with the engine's next step");
  }

  /** The pod faults at the requests where the kvindex run had them. */
  private Run samePodFaults(Run run, Fleet fleet) {
    Map<String, Integer> fired = kvindexRun.fired();
    if (fired.containsKey(RESET)) {
      run.at(fired.get(RESET), () -> fleet.pod(reset.pod()).resetPrefixCache());
    }
    if (fired.containsKey(RESTART)) {
      run.at(fired.get(RESTART), () -> fleet.pod(restarted).restart());
    }
    return run;
  }

  /**
   * Restarts pod-2's engine, or, when pod-2 is the one whose cache was reset or there is no pod-2,
   * the first other pod's.
   */
  private void restart(Fleet fleet) {
    String spared = reset == null ? null : reset.pod();
    List<String> names = fleet.names();
    if (!names.contains(RESTART_POD) || RESTART_POD.equals(spared)) {
      restarted = names.stream().filter(n -> !n.equals(spared)).findFirst().orElseThrow();
    }
    fleet.pod(restarted).restart();
  }

  private void kill(Stack stack) {
    beforeKill = stats(stack);
    long killedAt = System.nanoTime();
    stack.kill(KILLED_INGESTER);
    progress.line("killed " + KILLED_INGESTER + "; its leases expire within " + Stack.LEASE_TTL);
    Thread watcher =
        new Thread(
            () -> {
              long deadline = killedAt + Duration.ofSeconds(30).toNanos();
              while (System.nanoTime() < deadline) {
                IngestStats now = stats(stack);
                if (now.leasesHeld().getOrDefault(SURVIVOR, 0) >= config.pods()) {
                  takeover = Duration.ofNanos(System.nanoTime() - killedAt);
                  return;
                }
                try {
                  Thread.sleep(20);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
              }
            },
            "kvindex-demo-takeover-watch");
    watcher.setDaemon(true);
    watcher.start();
  }

  /** Waits until every pod's events up to its last batch are applied in Redis. */
  private void quiesce(Stack stack) throws InterruptedException {
    progress.line("waiting for the index to catch up with every pod (quiescence)");
    await(
        QUIESCENCE_TIMEOUT,
        () -> lagging(stack).isEmpty(),
        () -> "streams still behind: " + lagging(stack));
  }

  /**
   * The request sent after the run to an engine whose clear was still queued makes the stack's last
   * batch: quiescence sees Redis's watermark reach it a moment before the ingester has taken the
   * reply in and counted the purge. Waits for that count (the summary reads it next), for up to the
   * quiescence timeout; the summary says so if it never comes.
   */
  private void awaitClearCounted(Stack stack) throws InterruptedException {
    long deadline = System.nanoTime() + QUIESCENCE_TIMEOUT.toNanos();
    while (stats(stack).purges().getOrDefault("all_blocks_cleared", 0L) == 0
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
  }

  private List<String> lagging(Stack stack) {
    List<String> behind = new ArrayList<>();
    for (SimulatedPod pod : stack.fleet().pods()) {
      long last = pod.nextSequence(0) - 1;
      long applied = stack.watermark(pod.name());
      if (applied != last) {
        behind.add(pod.name() + " applied " + applied + " of " + last);
      }
    }
    return behind;
  }

  private Auditor.Accuracy audit(Stack stack) throws InterruptedException {
    progress.line("auditing the index against the simulator's ground truth");
    Auditor auditor =
        new Auditor(
            stack.auditIndex(),
            stack.auditInspector(),
            new RouterClient(stack.routers()),
            stack.fleet(),
            requests.subList(0, kvindexRun.routed()));
    long start = System.nanoTime();
    // Engines that evict without publishing leave the index wrong by design, and nothing changes
    // it once the run is over: audited again, it would only be found as wrong until the timeout.
    Duration retries =
        config.fault() == DemoConfig.Fault.SILENT_EVICTION ? Duration.ZERO : AUDIT_TIMEOUT;
    long deadline = start + retries.toNanos();
    Auditor.Accuracy accuracy = auditor.audit();
    int audits = 1;
    while (!accuracy.perfect() && System.nanoTime() < deadline) {
      accuracy = auditor.audit();
      audits++;
    }
    progress.line(
        String.format(
            java.util.Locale.ROOT,
            "audited in %.1f s (%d audit(s)): %d lookups of a request's chain, %d of a single block",
            (System.nanoTime() - start) / 1e9,
            audits,
            auditor.chainLookups(),
            auditor.blockLookups()));
    return accuracy;
  }

  private Run.Result baseline(String name) {
    try (Fleet fleet = Fleet.start(config, capacityBlocks, false)) {
      Policy policy = Policy.baseline(name, config.seed());
      progress.line("replaying the same requests with " + name + " routing on a fresh fleet");
      List<InferenceRequest> same = requests.subList(0, kvindexRun.routed());
      Run run = samePodFaults(new Run(same, fleet, policy), fleet);
      if (config.fault() == DemoConfig.Fault.SILENT_EVICTION
          && kvindexRun.fired().containsKey(FAULT)) {
        run.at(kvindexRun.fired().get(FAULT), () -> silentEviction(fleet));
      }
      return run.execute();
    }
  }

  private IngestStats stats(Stack stack) {
    Map<String, MeterRegistry> live = new LinkedHashMap<>();
    for (Map.Entry<String, Ingester> e : stack.ingesters().entrySet()) {
      live.put(e.getKey(), e.getValue().meterRegistry());
    }
    return IngestStats.read(registries, live);
  }

  private static void await(
      Duration timeout, BooleanSupplier condition, java.util.function.Supplier<String> why)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new DemoException("gave up after " + timeout.toSeconds() + " s: " + why.get());
      }
      Thread.sleep(50);
    }
  }
}
