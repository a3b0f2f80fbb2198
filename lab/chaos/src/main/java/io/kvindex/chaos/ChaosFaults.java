package io.kvindex.chaos;

import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.localredis.RedisNode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The faults of a {@link ChaosRun}, one per scenario: each injected while the load runs and the
 * {@link ChaosAuditor} checks the routers' answers, on the run's Redis and stack. Not thread-safe
 * (called from the run's thread).
 */
final class ChaosFaults {

  private final ChaosRun run;

  ChaosFaults(ChaosRun run) {
    this.run = run;
  }

  void inject() throws InterruptedException {
    switch (run.scenario) {
      case BASELINE -> ChaosRun.sleep(run.timings.fault());
      case REDIS_RESTART_EMPTY -> {
        run.standalone.kill();
        ChaosRun.sleep(Duration.ofSeconds(1));
        run.standalone.restart();
      }
      case REDIS_RESTART_AOF_MID_GC -> {
        clearTwoPods();
        run.standalone.kill();
        ChaosRun.sleep(Duration.ofSeconds(1));
        run.standalone.restart();
      }
      case REDIS_PAUSED -> {
        run.standalone.pause();
        ChaosRun.sleep(Duration.ofSeconds(5));
        run.standalone.resume();
      }
      case FLUSHALL -> run.connect(run.standalone).flushall();
      case CLUSTER_PRIMARY_KILLED, CLUSTER_PRIMARY_KILLED_MID_GC -> {
        if (run.scenario == ChaosScenario.CLUSTER_PRIMARY_KILLED_MID_GC) {
          clearTwoPods();
        }
        ClusterNode primary = run.indexPrimary();
        run.faultNotes.put("killed", primary.uri().toString());
        primary.kill();
        awaitPromotion(primary);
      }
      case CLUSTER_FAILOVER -> {
        ClusterNode primary = run.indexPrimary();
        ClusterNode replica = run.replicaOf(primary);
        run.connect(replica).clusterFailover(false);
        awaitPromotion(primary);
      }
      case SLOT_MIGRATION -> migrateIndexSlot();
      case SENTINEL_PROMOTION -> {
        RedisNode before = run.sentinel.primary();
        run.sentinel.failover();
        RedisNode after = run.sentinel.awaitPrimaryOtherThan(before, Duration.ofSeconds(30));
        run.faultNotes.put("promoted", after.uri().toString());
      }
      case INGESTER_PAUSED -> ingesterPaused();
      case INGESTER_PAUSED_MID_BATCH -> ingesterPausedMidBatch();
      case INGESTER_KILLED -> {
        run.stack.kill("ingester-1");
        ChaosRun.sleep(Stack.LEASE_TTL.plusSeconds(1));
      }
      case ZMQ_FAULTS -> {
        run.stack
            .fleet()
            .pods()
            .forEach(
                p -> p.faults().dropFraction(0.01).duplicateFraction(0.01).reorderFraction(0.01));
        ChaosRun.sleep(run.timings.fault());
        run.stack.fleet().pods().forEach(p -> p.faults().clear());
      }
      case MALFORMED_PAYLOADS -> {
        run.stack.fleet().pods().forEach(p -> p.faults().garbleFraction(0.01));
        ChaosRun.sleep(run.timings.fault());
        run.stack.fleet().pods().forEach(p -> p.faults().clear());
      }
      case POISON_BATCH -> poisonBatch();
      case SLEEP_ACROSS_RESTART -> sleepAcrossRestart();
      case REDIS_MAXMEMORY -> maxmemory();
      case SLOW_METRICS -> slowMetrics();
      case TOUCH_FLOOD -> {
        inferEvictions();
        new TouchFlood(
                run.stack.routers(),
                run.stack.fleet().names(),
                run.requests,
                run.connectBytes(run.standalone),
                run.stack.indexName())
            .run(run.timings.fault(), run.faultNotes);
      }
      case WORST_SCORE ->
          new WorstScore(
                  run.stack.routers(),
                  run.stack.fleet().names(),
                  run.stack.auditIndex(),
                  run.connect(run.standalone),
                  run.stack.indexName(),
                  run.idle)
              .run(run.timings.fault(), run.faultNotes);
      case HOSTILE_SCORE_FLOOD -> {
        RedisCommands<String, String> redis = run.connect(run.standalone);
        long before = ChaosProbes.usedMemory(redis);
        HostileScoreFlood.Sent sent =
            HostileScoreFlood.run(run.stack.routers(), run.timings.fault());
        run.faultNotes.put("hostile_requests", sent.requests());
        run.faultNotes.put("refused_by_routers", sent.refused());
        run.faultNotes.put("redis_memory_growth_bytes", ChaosProbes.usedMemory(redis) - before);
      }
      default -> throw new IllegalStateException(run.scenario.name());
    }
  }

  /** Clears two pods' caches: their purges leave GC with work, which the fault then cuts. */
  private void clearTwoPods() throws InterruptedException {
    for (SimulatedPod p : run.stack.fleet().pods().subList(0, 2)) {
      p.resetPrefixCache();
    }
    ChaosRun.sleep(Duration.ofMillis(300));
  }

  /**
   * Moves the slot of the index's group, with its keys, from the primary serving it to another, one
   * key per MIGRATE and {@link #MIGRATE_PAUSE} after each (the group's keys stay split between the
   * two nodes for seconds, as a reshard of a slot with many keys leaves them), while the load goes
   * on. Records what the move took and what the stack counted meanwhile: resets of the index and
   * purges because it was lost must stay at 0 (a move that loses nothing is no failover).
   */
  private void migrateIndexSlot() {
    int slot = SlotHash.getSlot(new KeySchema(run.stack.indexName(), 1).blocksKey(0));
    ClusterNode from = run.cluster.ownerOf(slot);
    ClusterNode to =
        run.cluster.primaries().stream()
            .filter(n -> !n.uri().equals(from.uri()))
            .findFirst()
            .orElseThrow();
    long resetsBefore = run.figures.counted(IndexMeters.RESETS, null, null);
    long lostBefore = run.figures.purgesDone("index_reset");
    long unverifiedBefore = run.figures.counted(IndexMeters.LOOKUP_NODE_UNVERIFIED, null, null);
    LocalRedisCluster.SlotMigration moved =
        run.cluster.migrateSlot(slot, to, 1, () -> pause(ChaosRun.MIGRATE_PAUSE));
    run.faultNotes.put("slot", slot);
    run.faultNotes.put("from", from.uri().toString());
    run.faultNotes.put("to", to.uri().toString());
    run.faultNotes.put("keys_moved", moved.keys());
    run.faultNotes.put("migrate_calls", moved.migrateCalls());
    run.faultNotes.put("longest_migrate_ms", moved.longestMigrate().toMillis());
    run.faultNotes.put("importing_to_node_ms", moved.took().toMillis());
    run.faultNotes.put("pause_after_each_migrate_ms", ChaosRun.MIGRATE_PAUSE.toMillis());
    run.faultNotes.put("owner_after", run.cluster.ownerOf(slot).uri().toString());
    run.faultNotes.put(
        "index_resets_counted", run.figures.counted(IndexMeters.RESETS, null, null) - resetsBefore);
    run.faultNotes.put("index_reset_purges", run.figures.purgesDone("index_reset") - lostBefore);
    run.faultNotes.put(
        "lookups_on_an_unverified_node",
        run.figures.counted(IndexMeters.LOOKUP_NODE_UNVERIFIED, null, null) - unverifiedBefore);
    run.resetsBeforeMigration = resetsBefore;
    run.lostBeforeMigration = lostBefore;
  }

  private static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void awaitPromotion(ClusterNode old) throws InterruptedException {
    ChaosRun.await(
        () -> !run.indexPrimary().uri().equals(old.uri()), Duration.ofSeconds(30), "a promotion");
    run.faultNotes.put("promoted", run.indexPrimary().uri().toString());
  }

  /**
   * A batch Redis can never apply (a KV-cache group index past the index's limit) on the first pod.
   */
  private void poisonBatch() {
    SimulatedPod pod = run.stack.fleet().pods().get(0);
    long seq = pod.inject(0, ChaosProbes.poisonPayload());
    run.faultNotes.put("pod", pod.name());
    run.faultNotes.put("sequence", seq);
  }

  /** The first pod asleep, Redis restarted empty meanwhile, then the pod awake. */
  private void sleepAcrossRestart() throws InterruptedException {
    SimulatedPod pod = run.stack.fleet().pods().get(0);
    pod.sleep(1);
    ChaosRun.sleep(Duration.ofSeconds(2)); // scraped asleep, purged
    run.standalone.kill();
    ChaosRun.sleep(Duration.ofSeconds(1));
    run.standalone.restart();
    ChaosRun.sleep(Duration.ofSeconds(3));
    pod.wakeUp();
    run.faultNotes.put("pod", pod.name());
  }

  /** Redis's maxmemory set to what it uses, so that every write that needs more is refused. */
  private void maxmemory() throws InterruptedException {
    RedisCommands<String, String> redis = run.connect(run.standalone);
    long used = ChaosProbes.usedMemory(redis);
    redis.configSet("maxmemory", Long.toString(used));
    run.faultNotes.put("maxmemory", used);
    long until = System.nanoTime() + run.timings.fault().toNanos();
    String notReady = null;
    while (System.nanoTime() < until) {
      for (var ingester : run.stack.ingesters().values()) {
        String said = ChaosProbes.readyz(ingester.httpPort());
        if (notReady == null && !said.startsWith("200")) {
          notReady = said;
        }
      }
      ChaosRun.sleep(Duration.ofMillis(250));
    }
    run.faultNotes.put(
        "ingester_readyz_during_fault", notReady == null ? "always ready" : notReady);
    redis.configSet("maxmemory", "0");
  }

  /** One ingester frozen past its leases, its pods quiet meanwhile, then let go on. */
  private void ingesterPaused() throws InterruptedException {
    run.idle.set(true); // its pods go quiet while it is frozen
    var frozen = run.stack.gate("ingester-1");
    frozen.close();
    ChaosRun.sleep(Stack.LEASE_TTL.multipliedBy(2).plusSeconds(1));
    frozen.open();
    run.idle.set(false);
  }

  /**
   * Every pod's evictions inferred (a resync request each, as a router's closed loop makes), the
   * load stopped and applied, then a 300-block prefill on every pod while ingester-1 (calls of 64
   * blocks) is set to freeze between two calls of a batch; frozen past its lease, its streams move
   * to ingester-2 (calls of 128), which takes the prefills up where they were left.
   */
  private void ingesterPausedMidBatch() throws InterruptedException {
    inferEvictions();
    run.idle.set(true);
    if (!run.caughtUp(Duration.ofSeconds(30))) {
      run.faultNotes.put("caught_up_before_the_prefills", false);
    }
    var frozen = run.stack.gate("ingester-1");
    frozen.closeBetweenChunks();
    Random random = new Random(run.seed);
    for (SimulatedPod pod : run.stack.fleet().pods()) {
      int[] prompt =
          random.ints(ChaosRun.LONG_PREFILL_BLOCKS * Workloads.BLOCK_SIZE + 1, 0, 32_000).toArray();
      pod.submit(InferenceRequest.of(prompt, new int[] {1}));
    }
    ChaosRun.await(frozen::closed, Duration.ofSeconds(30), "ingester-1 frozen between two calls");
    run.faultNotes.put("batches_left_between_calls", batchesInProgress());
    ChaosRun.sleep(Stack.LEASE_TTL.multipliedBy(2).plusSeconds(1));
    frozen.open();
    run.idle.set(false);
  }

  /**
   * The first pod's {@code /metrics} served by a page that can stall, the others' by the pods
   * themselves.
   */
  String firstPageStallable(SimulatedPod pod) {
    if (run.stallable != null) {
      return pod.httpAddress() + "/metrics";
    }
    run.stallable = StalledMetricsPage.start(pod);
    run.opened.add(run.stallable);
    return run.stallable.url();
  }

  /**
   * The load stopped (so that only {@code /metrics} can tell what happens next) and the first pod's
   * page stalled; once a scrape is held in it, the second pod put to sleep and the third restarted.
   * Records how long each took to be purged (at most the round the stalled page holds, a scrape
   * timeout, then the next round's wait, a reconcile interval, and the purge itself) and waits
   * until the held scrape has timed out.
   */
  private void slowMetrics() throws InterruptedException {
    run.idle.set(true);
    if (!run.caughtUp(Duration.ofSeconds(30))) {
      run.faultNotes.put("caught_up_before_the_fault", false);
    }
    long timeoutsBefore = run.figures.counted("kvindex.ingester.scrapes", "outcome", "timeout");
    long sleepsBefore = run.figures.purgesDone("sleep");
    long restartsBefore = run.figures.purgesDone("engine_restart");
    long unreachableBefore = run.figures.purgesDone("unreachable");
    run.stallable.stall(true);
    ChaosRun.await(
        run.stallable::holding, Duration.ofSeconds(10), "a scrape held in the stalled page");
    List<SimulatedPod> pods = run.stack.fleet().pods();
    SimulatedPod sleeper = pods.get(1);
    SimulatedPod restarted = pods.get(2);
    long changed = System.nanoTime();
    sleeper.sleep(1);
    restarted.restart();
    Duration bound = Stack.SCRAPE_TIMEOUT.plus(Stack.RECONCILE_INTERVAL).plusSeconds(1);
    long limit = changed + bound.multipliedBy(4).toNanos();
    long sleepSeen = -1;
    long restartSeen = -1;
    long timedOut = 0;
    while ((sleepSeen < 0 || restartSeen < 0 || timedOut == 0) && System.nanoTime() < limit) {
      long now = System.nanoTime();
      timedOut =
          run.figures.counted("kvindex.ingester.scrapes", "outcome", "timeout") - timeoutsBefore;
      if (sleepSeen < 0 && run.figures.purgesDone("sleep") > sleepsBefore) {
        sleepSeen = now - changed;
      }
      if (restartSeen < 0 && run.figures.purgesDone("engine_restart") > restartsBefore) {
        restartSeen = now - changed;
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    run.faultNotes.put("stalled_pod", pods.get(0).name());
    run.faultNotes.put("sleeping_pod", sleeper.name());
    run.faultNotes.put("restarted_pod", restarted.name());
    run.faultNotes.put("sleep_purged_after_ms", sleepSeen < 0 ? -1 : sleepSeen / 1_000_000);
    run.faultNotes.put("restart_purged_after_ms", restartSeen < 0 ? -1 : restartSeen / 1_000_000);
    run.faultNotes.put("bound_ms", bound.toMillis());
    run.faultNotes.put("stalled_pages_sent", run.stallable.stalledRequests());
    run.faultNotes.put("scrapes_timed_out", timedOut);
    run.faultNotes.put(
        "stalled_pod_purged_as_unreachable",
        run.figures.purgesDone("unreachable") > unreachableBefore);
    run.stallable.stall(false);
    sleeper.wakeUp();
    run.idle.set(false);
  }

  /** Asks for a resync of every pod and waits until each pod's evictions are inferred. */
  private void inferEvictions() throws InterruptedException {
    for (String pod : run.stack.fleet().names()) {
      run.stack
          .auditIndex()
          .requestResyncAsync(Stack.MODEL, pod, "chaos: infer evictions", Duration.ofMinutes(1))
          .join();
    }
    ChaosRun.await(
        () -> run.stack.fleet().names().stream().allMatch(this::inferred),
        Duration.ofSeconds(30),
        "every pod's evictions inferred");
    run.faultNotes.put("pods_inferred", run.stack.fleet().names().size());
  }

  private boolean inferred(String pod) {
    try {
      return run.stack.auditIndex().evictionsInferredAsync(Stack.MODEL, pod).join().isPresent();
    } catch (RuntimeException e) {
      return false; // asked again
    }
  }

  /** Streams whose record names a batch left between two of its calls. */
  private long batchesInProgress() {
    return run.stack.auditInspector().read(Stack.MODEL, null).pods().stream()
        .flatMap(p -> p.ranks().stream())
        .filter(r -> r.batchInProgress() != null)
        .count();
  }
}
