package io.kvindex.chaos;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Auditor;
import io.kvindex.demo.DemoConfig;
import io.kvindex.demo.RouterClient;
import io.kvindex.demo.Stack;
import io.kvindex.ingester.discovery.PodSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The heap-capped ring rebuild ({@link ChaosScenario#RING_REBUILD_HEAP_CAPPED}): an ingester in a
 * JVM of its own at a heap cap rebuilds every pod's full replay ring while Redis loses the index,
 * on the run's Redis and stack. Not thread-safe (called from the run's thread).
 */
final class RingRebuildRun {
  private static final Logger log = LoggerFactory.getLogger(ChaosRun.class);

  private RingRebuildRun() {}

  /**
   * The shape of the heap-capped ring rebuild.
   *
   * @param pods simulated pods
   * @param ringBatches batches in each pod's replay ring (vLLM's default ring)
   * @param promptBlocks blocks of each prompt, all new: each request publishes one batch storing
   *     them all with their token ids, and removing what they evict
   * @param capacityBlocks each pod's GPU cache
   * @param heap the ingester's {@code -Xmx}
   * @param rate requests per second over the fleet while the rings are rebuilt
   * @param beforeFlush how long the ingester rebuilds from its start before FLUSHALL
   * @param rebuildLimit how long the rebuilds may take in all
   */
  record RingRebuild(
      int pods,
      int ringBatches,
      int promptBlocks,
      int capacityBlocks,
      String heap,
      double rate,
      Duration beforeFlush,
      Duration rebuildLimit) {
    static final RingRebuild FULL =
        new RingRebuild(
            8, 10_000, 256, 1024, "384m", 4, Duration.ofSeconds(20), Duration.ofMinutes(30));
    static final RingRebuild QUICK =
        new RingRebuild(
            8, 1_000, 256, 1024, "128m", 4, Duration.ofSeconds(10), Duration.ofMinutes(5));
  }

  /**
   * Fills every pod's ring, then starts one ingester in a JVM of its own at the heap cap: it
   * rebuilds every stream from its ring (what a successor of an ingester that ran out of memory
   * does), and while it does Redis loses the index (FLUSHALL), so it starts over. The heap is
   * sampled throughout.
   */
  static ObjectNode execute(ChaosRun run, RingRebuild shape) throws InterruptedException {
    long began = System.nanoTime();
    String uri = run.startRedis();
    DemoConfig config =
        DemoConfig.builder()
            .redisUri(uri)
            .pods(shape.pods())
            .duration(shape.rebuildLimit())
            .requestsPerSecond(shape.rate())
            .seed(run.seed)
            .build();
    run.stack = Stack.start(config, shape.capacityBlocks(), List.of());
    run.opened.add(run.stack);
    run.figures = new StackFigures(run.stack::registries);
    log.info(
        "chaos {}: filling {} pods' rings with {} batches of {} blocks",
        run.scenario.cliName(),
        shape.pods(),
        shape.ringBatches(),
        shape.promptBlocks());
    long fillStarted = System.nanoTime();
    run.requests =
        RingFill.fill(
            run.stack.fleet().pods(), shape.ringBatches(), shape.promptBlocks(), run.seed, 64);
    long fillNanos = System.nanoTime() - fillStarted;

    Path logFile;
    try {
      logFile = Files.createTempDirectory("kvindex-chaos-").resolve("ingester.log");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make a directory for the ingester's log", e);
    }
    IngesterProcess ingester =
        IngesterProcess.start(List.of("-Xmx" + shape.heap()), ingesterArgs(run, uri), logFile);
    run.opened.add(ingester);
    HeapSampler heap = new HeapSampler(ingester.httpPort());
    run.opened.add(heap);
    RouterClient routers = new RouterClient(run.stack.routers());
    ChaosAuditor auditor =
        new ChaosAuditor(
            run.stack.fleet(),
            run.stack.auditIndex(),
            routers,
            run.requests,
            ChaosRun.GRACE,
            run.seed);
    run.opened.add(auditor);
    auditor.watch();
    run.startLoad(shape.rate());
    auditor.start();
    ChaosRun.sleep(shape.beforeFlush());
    log.info("chaos {}: fault: FLUSHALL", run.scenario.cliName());
    auditor.faultStarted();
    long faultStarted = System.nanoTime();
    run.connect(run.standalone).flushall();
    auditor.faultEnded();
    long faultNanos = System.nanoTime() - faultStarted;
    long behind = run.quiesce(shape.rebuildLimit(), ingester::alive);
    long rebuiltNanos = System.nanoTime() - faultStarted;
    ChaosRun.sleep(ChaosRun.GRACE);
    heap.sample();
    auditor.close();
    run.loading.set(false);
    run.load.join();

    ObjectNode out = ChaosRun.JSON.createObjectNode();
    out.put("scenario", run.scenario.cliName());
    out.put("description", run.scenario.description);
    out.put("topology", "standalone");
    out.put("strict", run.scenario.strict);
    ObjectNode shapeNode = out.putObject("setup");
    shapeNode.put("pods", shape.pods());
    shapeNode.put("ring_batches", shape.ringBatches());
    shapeNode.put("prompt_blocks", shape.promptBlocks());
    shapeNode.put("capacity_blocks", shape.capacityBlocks());
    shapeNode.put("ingester_heap", "-Xmx" + shape.heap());
    shapeNode.put("requests_per_s_while_rebuilding", shape.rate());
    shapeNode.put("fill_s", Math.round(fillNanos / 1e8) / 10.0);
    out.put("fault_ms", TimeUnit.NANOSECONDS.toMillis(faultNanos));
    out.put("rebuilt_after_fault_s", Math.round(rebuiltNanos / 1e8) / 10.0);
    out.put("requests_served", run.served.get());
    out.put("requests_refused_by_pods", run.refused.get());
    auditor.writeTo(out);
    out.put("batches_lost", behind);
    out.put("fenced_writes", heap.lastTotal("kvindex_ingester_fenced_total"));
    out.put("real_errors_surfaced", heap.lastTotal("kvindex_redis_errors_total"));
    out.set("purges", ChaosRun.JSON.valueToTree(heap.last("kvindex_ingester_purges_total")));
    out.set("replays", ChaosRun.JSON.valueToTree(heap.last("kvindex_ingester_replays_total")));
    out.set(
        "live_batches_dropped",
        ChaosRun.JSON.valueToTree(heap.last("kvindex_ingester_batches_dropped_total")));
    out.put("replay_waits", heap.lastTotal("kvindex_ingester_replay_waits_total"));
    ObjectNode memory = out.putObject("heap");
    heap.writeTo(memory);
    memory.put("ingester_alive_at_end", ingester.alive());
    memory.put("ingester_exit_code", ingester.exitCode());
    memory.put("out_of_memory", ingester.ranOutOfMemory());
    memory.put("ingester_log", logFile.toString());
    Auditor.Accuracy accuracy =
        new Auditor(
                run.stack.auditIndex(),
                run.stack.auditInspector(),
                routers,
                run.stack.fleet(),
                run.requests)
            .audit();
    out.put("quiescence_pods_exact_pct", ChaosRun.percent(accuracy.podFraction()));
    out.put("quiescence_lookups_exact_pct", ChaosRun.percent(accuracy.lookups().fraction()));
    if (!accuracy.wrongPods().isEmpty()) {
      out.set("quiescence_wrong_pods", ChaosRun.JSON.valueToTree(accuracy.wrongPods()));
    }
    out.put("elapsed_s", Math.round((System.nanoTime() - began) / 1e8) / 10.0);
    return out;
  }

  /** The separate ingester's command line: the stack's index and pods, the demo's timings. */
  private static List<String> ingesterArgs(ChaosRun run, String redisUri) {
    List<String> args = new ArrayList<>();
    args.add("--redis-uri=" + redisUri);
    args.add("--index-name=" + run.stack.indexName());
    args.add("--replica-id=ingester-heap-capped");
    args.add("--lease-ttl=" + Stack.LEASE_TTL.toMillis() + "ms");
    args.add("--reconcile-interval=500ms");
    args.add("--idle-catch-up=1s");
    args.add("--replay-idle-timeout=" + Stack.REPLAY_IDLE_TIMEOUT.toMillis() + "ms");
    for (PodSpec p : run.stack.podSpecs()) {
      args.add(
          "--pod=name="
              + p.name()
              + ",model="
              + p.model()
              + ",endpoint="
              + p.publisherEndpoint(0)
              + ",replay="
              + p.replayEndpoint(0)
              + ",metrics="
              + p.metricsUrl());
    }
    return args;
  }
}
