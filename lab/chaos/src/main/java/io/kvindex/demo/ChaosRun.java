package io.kvindex.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.localredis.LocalRedisSentinel;
import io.kvindex.localredis.RedisNode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.PodUnavailableException;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.load.TimedRequest;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One chaos scenario: its Redis (standalone, cluster or Sentinel set), the whole stack on it
 * ({@link Stack}: simulated pods, 2 ingesters, 2 routers), load, the {@link ChaosAuditor} checking
 * router answers throughout, the fault, then quiescence and the final audit. Not thread-safe.
 */
final class ChaosRun implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ChaosRun.class);

  /** How long an event may take from engine to index before a stale answer counts as wrong. */
  static final Duration GRACE = Duration.ofSeconds(1);

  private static final Duration QUIESCENCE_LIMIT = Duration.ofSeconds(60);

  /** The prefill each pod serves while an ingester is to be frozen between two of its calls. */
  static final int LONG_PREFILL_BLOCKS = 300;

  /**
   * The ingesters' blocks per apply call in the mid-batch scenario: the one frozen packs a batch in
   * smaller calls than the one that takes it over, so a resume by chunk index would skip blocks.
   */
  private static final List<Integer> MID_BATCH_CHUNK_BLOCKS = List.of(64, 128);

  /**
   * The pods' capacity in the mid-batch scenario: room for the prefills without an eviction, so
   * that what the frozen ingester has not applied yet is only stores (late, never wrong).
   */
  private static final int MID_BATCH_CAPACITY_BLOCKS = 16_384;

  private static final ObjectMapper JSON = new ObjectMapper();

  /** The wait after each MIGRATE of the slot-migration scenario, while the keys are split. */
  private static final Duration MIGRATE_PAUSE = Duration.ofMillis(100);

  /**
   * Phase lengths of a run: load before the fault ({@code warm}), a timed fault's length, load
   * after it; {@code quick} picks the smaller shape of the scenarios that have one of their own.
   */
  record Timings(
      Duration warm, Duration fault, Duration after, double rate, int pods, boolean quick) {
    static final Timings QUICK =
        new Timings(
            Duration.ofSeconds(4), Duration.ofSeconds(4), Duration.ofSeconds(5), 50, 4, true);
    static final Timings FULL =
        new Timings(
            Duration.ofSeconds(8), Duration.ofSeconds(8), Duration.ofSeconds(12), 80, 6, false);

    /** These timings with other phase lengths (rate, pods and shape kept). */
    Timings withPhases(Duration warm, Duration fault, Duration after) {
      return new Timings(warm, fault, after, rate, pods, quick);
    }
  }

  private final ChaosScenario scenario;
  private final Timings timings;
  private final long seed;
  private final List<AutoCloseable> opened = new ArrayList<>();
  private LocalRedis standalone;
  private LocalRedisCluster cluster;
  private LocalRedisSentinel sentinel;
  private Stack stack;
  private List<InferenceRequest> requests;
  private final AtomicBoolean loading = new AtomicBoolean();
  private final AtomicBoolean idle = new AtomicBoolean();
  private final AtomicLong served = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final ObjectNode faultNotes = JSON.createObjectNode();
  private StackFigures figures;
  private Thread load;
  private StalledMetricsPage stallable;
  private long resetsBeforeMigration;
  private long lostBeforeMigration;

  private ChaosRun(ChaosScenario scenario, Timings timings, long seed) {
    this.scenario = scenario;
    this.timings = timings;
    this.seed = seed;
  }

  /** Runs the scenario and returns its figures. */
  static ObjectNode run(ChaosScenario scenario, Timings timings, long seed)
      throws InterruptedException {
    try (ChaosRun run = new ChaosRun(scenario, timings, seed)) {
      return run.execute();
    }
  }

  private ObjectNode execute() throws InterruptedException {
    if (scenario == ChaosScenario.RING_REBUILD_HEAP_CAPPED) {
      return executeHeapCapped(timings.quick() ? RingRebuild.QUICK : RingRebuild.FULL);
    }
    long began = System.nanoTime();
    String uri = startRedis();
    DemoConfig config =
        DemoConfig.builder()
            .redisUri(uri)
            .pods(timings.pods())
            .duration(timings.warm().plus(timings.fault()).plus(timings.after()))
            .requestsPerSecond(timings.rate())
            .seed(seed)
            .build();
    requests = Workloads.requests(config).stream().map(TimedRequest::request).toList();
    stack =
        switch (scenario) {
          case INGESTER_PAUSED_MID_BATCH ->
              Stack.start(config, MID_BATCH_CAPACITY_BLOCKS, MID_BATCH_CHUNK_BLOCKS);
          case SLOW_METRICS ->
              // One ingester, owning every pod: each of its rounds scrapes the stalled page.
              Stack.start(
                  config,
                  512,
                  List.of(PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS),
                  this::firstPageStallable);
          default -> Stack.start(config, 512);
        };
    opened.add(stack);
    figures = new StackFigures(stack::registries);
    RouterClient routers = new RouterClient(stack.routers());
    ChaosAuditor auditor =
        new ChaosAuditor(stack.fleet(), stack.auditIndex(), routers, requests, GRACE, seed);
    opened.add(auditor);
    long realBefore = figures.counted("kvindex.redis.errors", null, null);
    // The truth is followed from before the load: what a pod drops during the warm-up is seen.
    auditor.watch();
    startLoad(timings.rate());
    sleep(timings.warm());
    auditor.start();
    sleep(Duration.ofSeconds(1));
    log.info("chaos {}: fault: {}", scenario.cliName(), scenario.description);
    auditor.faultStarted();
    long faultStarted = System.nanoTime();
    inject();
    auditor.faultEnded();
    long faultNanos = System.nanoTime() - faultStarted;
    sleep(timings.after());
    auditor.close();
    loading.set(false);
    load.join();

    ObjectNode out = JSON.createObjectNode();
    out.put("scenario", scenario.cliName());
    out.put("description", scenario.description);
    out.put("topology", scenario.topology.name().toLowerCase(java.util.Locale.ROOT));
    out.put("strict", scenario.strict);
    out.put("fault_ms", TimeUnit.NANOSECONDS.toMillis(faultNanos));
    out.put("requests_served", served.get());
    out.put("requests_refused_by_pods", refused.get());
    auditor.writeTo(out);
    long behind = quiesce(QUIESCENCE_LIMIT, () -> true);
    out.put("batches_lost", behind);
    out.put(
        "real_errors_surfaced", figures.counted("kvindex.redis.errors", null, null) - realBefore);
    out.put("fenced_writes", figures.counted("kvindex.ingester.fenced", null, null));
    out.put("purges", figures.purgesByReason());
    out.put("ingest_lag_max_ms", Math.round(figures.lagMaxMillis()));
    Auditor.Accuracy accuracy =
        new Auditor(stack.auditIndex(), stack.auditInspector(), routers, stack.fleet(), requests)
            .audit();
    out.put("quiescence_pods_exact_pct", percent(accuracy.podFraction()));
    out.put("quiescence_lookups_exact_pct", percent(accuracy.lookups().fraction()));
    if (!accuracy.wrongPods().isEmpty()) {
      out.set("quiescence_wrong_pods", JSON.valueToTree(accuracy.wrongPods()));
    }
    if (scenario == ChaosScenario.SLOT_MIGRATION) {
      // Counted until quiescence: a reset found by a later write or check counts too.
      faultNotes.put(
          "index_resets_until_quiescence",
          figures.counted(IndexMeters.RESETS, null, null) - resetsBeforeMigration);
      faultNotes.put(
          "index_reset_purges_until_quiescence",
          figures.purgesDone("index_reset") - lostBeforeMigration);
    }
    if (!faultNotes.isEmpty()) {
      out.set("fault", faultNotes);
    }
    out.put("elapsed_s", Math.round((System.nanoTime() - began) / 1e8) / 10.0);
    return out;
  }

  // ---------------------------------------------------------------- Redis

  private String startRedis() {
    switch (scenario.topology) {
      case STANDALONE, STANDALONE_AOF -> {
        LocalRedis.Builder b = LocalRedis.builder().setting("maxmemory-policy", "noeviction");
        if (scenario.topology == ChaosScenario.Topology.STANDALONE_AOF) {
          b.setting("appendonly", "yes").setting("appendfsync", "always");
        }
        standalone = b.start();
        opened.add(standalone);
        return "redis://127.0.0.1:" + standalone.port();
      }
      case CLUSTER -> {
        cluster = LocalRedisCluster.builder().nodeTimeout(Duration.ofSeconds(1)).start();
        opened.add(cluster);
        return "redis-cluster://"
            + cluster.seedUris().stream()
                .map(u -> u.getHost() + ":" + u.getPort())
                .collect(Collectors.joining(","));
      }
      case SENTINEL -> {
        sentinel = LocalRedisSentinel.builder().downAfter(Duration.ofSeconds(1)).start();
        opened.add(sentinel);
        return sentinel.uri().toString();
      }
      default -> throw new IllegalStateException(scenario.topology.name());
    }
  }

  /** A plain connection to one node, closed with the run. */
  private RedisCommands<String, String> connect(RedisNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    opened.add(client::shutdown);
    StatefulRedisConnection<String, String> c = client.connect();
    opened.add(c);
    return c.sync();
  }

  /** A plain connection to one node with byte keys and values, closed with the run. */
  private RedisCommands<byte[], byte[]> connectBytes(RedisNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    opened.add(client::shutdown);
    StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
    opened.add(c);
    return c.sync();
  }

  /** The cluster primary serving the index (its single group's hash tag) now. */
  private ClusterNode indexPrimary() {
    byte[] blocks = new KeySchema(stack.indexName(), 1).blocksKey(0);
    return cluster.ownerOf(SlotHash.getSlot(blocks));
  }

  private ClusterNode replicaOf(ClusterNode primary) {
    for (ClusterNode r : cluster.replicas()) {
      if (connect(r).info("replication").contains("master_port:" + primary.port())) {
        return r;
      }
    }
    throw new IllegalStateException("no replica of the index's primary " + primary.uri());
  }

  // ---------------------------------------------------------------- load

  private void startLoad(double rate) {
    loading.set(true);
    PodRouter random = PodRouter.random(seed);
    load =
        new Thread(
            () -> {
              long intervalNanos = (long) (1e9 / rate);
              long next = System.nanoTime();
              int i = 0;
              while (loading.get()) {
                if (!idle.get()) {
                  try {
                    stack.fleet().submit(requests.get(i++ % requests.size()), random);
                    served.incrementAndGet();
                  } catch (PodUnavailableException e) {
                    refused.incrementAndGet(); // a sleeping pod
                  } catch (RuntimeException e) {
                    refused.incrementAndGet();
                  }
                }
                next += intervalNanos;
                long wait = next - System.nanoTime();
                if (wait > 0) {
                  try {
                    TimeUnit.NANOSECONDS.sleep(wait);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              }
            },
            "chaos-load");
    load.setDaemon(true);
    load.start();
  }

  // ---------------------------------------------------------------- faults

  private void inject() throws InterruptedException {
    switch (scenario) {
      case BASELINE -> sleep(timings.fault());
      case REDIS_RESTART_EMPTY -> {
        standalone.kill();
        sleep(Duration.ofSeconds(1));
        standalone.restart();
      }
      case REDIS_RESTART_AOF_MID_GC -> {
        clearTwoPods();
        standalone.kill();
        sleep(Duration.ofSeconds(1));
        standalone.restart();
      }
      case REDIS_PAUSED -> {
        standalone.pause();
        sleep(Duration.ofSeconds(5));
        standalone.resume();
      }
      case FLUSHALL -> connect(standalone).flushall();
      case CLUSTER_PRIMARY_KILLED, CLUSTER_PRIMARY_KILLED_MID_GC -> {
        if (scenario == ChaosScenario.CLUSTER_PRIMARY_KILLED_MID_GC) {
          clearTwoPods();
        }
        ClusterNode primary = indexPrimary();
        faultNotes.put("killed", primary.uri().toString());
        primary.kill();
        awaitPromotion(primary);
      }
      case CLUSTER_FAILOVER -> {
        ClusterNode primary = indexPrimary();
        ClusterNode replica = replicaOf(primary);
        connect(replica).clusterFailover(false);
        awaitPromotion(primary);
      }
      case SLOT_MIGRATION -> migrateIndexSlot();
      case SENTINEL_PROMOTION -> {
        RedisNode before = sentinel.primary();
        sentinel.failover();
        RedisNode after = sentinel.awaitPrimaryOtherThan(before, Duration.ofSeconds(30));
        faultNotes.put("promoted", after.uri().toString());
      }
      case INGESTER_PAUSED -> ingesterPaused();
      case INGESTER_PAUSED_MID_BATCH -> ingesterPausedMidBatch();
      case INGESTER_KILLED -> {
        stack.kill("ingester-1");
        sleep(Stack.LEASE_TTL.plusSeconds(1));
      }
      case ZMQ_FAULTS -> {
        stack
            .fleet()
            .pods()
            .forEach(
                p -> p.faults().dropFraction(0.01).duplicateFraction(0.01).reorderFraction(0.01));
        sleep(timings.fault());
        stack.fleet().pods().forEach(p -> p.faults().clear());
      }
      case MALFORMED_PAYLOADS -> {
        stack.fleet().pods().forEach(p -> p.faults().garbleFraction(0.01));
        sleep(timings.fault());
        stack.fleet().pods().forEach(p -> p.faults().clear());
      }
      case POISON_BATCH -> poisonBatch();
      case SLEEP_ACROSS_RESTART -> sleepAcrossRestart();
      case REDIS_MAXMEMORY -> maxmemory();
      case SLOW_METRICS -> slowMetrics();
      case TOUCH_FLOOD -> {
        inferEvictions();
        new TouchFlood(
                stack.routers(),
                stack.fleet().names(),
                requests,
                connectBytes(standalone),
                stack.indexName())
            .run(timings.fault(), faultNotes);
      }
      case WORST_SCORE ->
          new WorstScore(
                  stack.routers(),
                  stack.fleet().names(),
                  stack.auditIndex(),
                  connect(standalone),
                  stack.indexName(),
                  idle)
              .run(timings.fault(), faultNotes);
      case HOSTILE_SCORE_FLOOD -> {
        RedisCommands<String, String> redis = connect(standalone);
        long before = ChaosProbes.usedMemory(redis);
        HostileScoreFlood.Sent sent = HostileScoreFlood.run(stack.routers(), timings.fault());
        faultNotes.put("hostile_requests", sent.requests());
        faultNotes.put("refused_by_routers", sent.refused());
        faultNotes.put("redis_memory_growth_bytes", ChaosProbes.usedMemory(redis) - before);
      }
      default -> throw new IllegalStateException(scenario.name());
    }
  }

  /** Clears two pods' caches: their purges leave GC with work, which the fault then cuts. */
  private void clearTwoPods() throws InterruptedException {
    for (SimulatedPod p : stack.fleet().pods().subList(0, 2)) {
      p.resetPrefixCache();
    }
    sleep(Duration.ofMillis(300));
  }

  /**
   * Moves the slot of the index's group, with its keys, from the primary serving it to another, one
   * key per MIGRATE and {@link #MIGRATE_PAUSE} after each (the group's keys stay split between the
   * two nodes for seconds, as a reshard of a slot with many keys leaves them), while the load goes
   * on. Records what the move took and what the stack counted meanwhile: resets of the index and
   * purges because it was lost must stay at 0 (a move that loses nothing is no failover).
   */
  private void migrateIndexSlot() {
    int slot = SlotHash.getSlot(new KeySchema(stack.indexName(), 1).blocksKey(0));
    ClusterNode from = cluster.ownerOf(slot);
    ClusterNode to =
        cluster.primaries().stream()
            .filter(n -> !n.uri().equals(from.uri()))
            .findFirst()
            .orElseThrow();
    long resetsBefore = figures.counted(IndexMeters.RESETS, null, null);
    long lostBefore = figures.purgesDone("index_reset");
    long unverifiedBefore = figures.counted(IndexMeters.LOOKUP_NODE_UNVERIFIED, null, null);
    LocalRedisCluster.SlotMigration moved =
        cluster.migrateSlot(slot, to, 1, () -> pause(MIGRATE_PAUSE));
    faultNotes.put("slot", slot);
    faultNotes.put("from", from.uri().toString());
    faultNotes.put("to", to.uri().toString());
    faultNotes.put("keys_moved", moved.keys());
    faultNotes.put("migrate_calls", moved.migrateCalls());
    faultNotes.put("longest_migrate_ms", moved.longestMigrate().toMillis());
    faultNotes.put("importing_to_node_ms", moved.took().toMillis());
    faultNotes.put("pause_after_each_migrate_ms", MIGRATE_PAUSE.toMillis());
    faultNotes.put("owner_after", cluster.ownerOf(slot).uri().toString());
    faultNotes.put(
        "index_resets_counted", figures.counted(IndexMeters.RESETS, null, null) - resetsBefore);
    faultNotes.put("index_reset_purges", figures.purgesDone("index_reset") - lostBefore);
    faultNotes.put(
        "lookups_on_an_unverified_node",
        figures.counted(IndexMeters.LOOKUP_NODE_UNVERIFIED, null, null) - unverifiedBefore);
    resetsBeforeMigration = resetsBefore;
    lostBeforeMigration = lostBefore;
  }

  private static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void awaitPromotion(ClusterNode old) throws InterruptedException {
    await(() -> !indexPrimary().uri().equals(old.uri()), Duration.ofSeconds(30), "a promotion");
    faultNotes.put("promoted", indexPrimary().uri().toString());
  }

  /**
   * A batch Redis can never apply (a KV-cache group index past the index's limit) on the first pod.
   */
  private void poisonBatch() {
    SimulatedPod pod = stack.fleet().pods().get(0);
    long seq = pod.inject(0, ChaosProbes.poisonPayload());
    faultNotes.put("pod", pod.name());
    faultNotes.put("sequence", seq);
  }

  /** The first pod asleep, Redis restarted empty meanwhile, then the pod awake. */
  private void sleepAcrossRestart() throws InterruptedException {
    SimulatedPod pod = stack.fleet().pods().get(0);
    pod.sleep(1);
    sleep(Duration.ofSeconds(2)); // scraped asleep, purged
    standalone.kill();
    sleep(Duration.ofSeconds(1));
    standalone.restart();
    sleep(Duration.ofSeconds(3));
    pod.wakeUp();
    faultNotes.put("pod", pod.name());
  }

  /** Redis's maxmemory set to what it uses, so that every write that needs more is refused. */
  private void maxmemory() throws InterruptedException {
    RedisCommands<String, String> redis = connect(standalone);
    long used = ChaosProbes.usedMemory(redis);
    redis.configSet("maxmemory", Long.toString(used));
    faultNotes.put("maxmemory", used);
    long until = System.nanoTime() + timings.fault().toNanos();
    String notReady = null;
    while (System.nanoTime() < until) {
      for (var ingester : stack.ingesters().values()) {
        String said = ChaosProbes.readyz(ingester.httpPort());
        if (notReady == null && !said.startsWith("200")) {
          notReady = said;
        }
      }
      sleep(Duration.ofMillis(250));
    }
    faultNotes.put("ingester_readyz_during_fault", notReady == null ? "always ready" : notReady);
    redis.configSet("maxmemory", "0");
  }

  /** One ingester frozen past its leases, its pods quiet meanwhile, then let go on. */
  private void ingesterPaused() throws InterruptedException {
    idle.set(true); // its pods go quiet while it is frozen
    var frozen = stack.gate("ingester-1");
    frozen.close();
    sleep(Stack.LEASE_TTL.multipliedBy(2).plusSeconds(1));
    frozen.open();
    idle.set(false);
  }

  /**
   * Every pod's evictions inferred (a resync request each, as a router's closed loop makes), the
   * load stopped and applied, then a 300-block prefill on every pod while ingester-1 (calls of 64
   * blocks) is set to freeze between two calls of a batch; frozen past its lease, its streams move
   * to ingester-2 (calls of 128), which takes the prefills up where they were left.
   */
  private void ingesterPausedMidBatch() throws InterruptedException {
    inferEvictions();
    idle.set(true);
    if (!caughtUp(Duration.ofSeconds(30))) {
      faultNotes.put("caught_up_before_the_prefills", false);
    }
    var frozen = stack.gate("ingester-1");
    frozen.closeBetweenChunks();
    Random random = new Random(seed);
    for (SimulatedPod pod : stack.fleet().pods()) {
      int[] prompt =
          random.ints(LONG_PREFILL_BLOCKS * Workloads.BLOCK_SIZE + 1, 0, 32_000).toArray();
      pod.submit(InferenceRequest.of(prompt, new int[] {1}));
    }
    await(frozen::closed, Duration.ofSeconds(30), "ingester-1 frozen between two calls");
    faultNotes.put("batches_left_between_calls", batchesInProgress());
    sleep(Stack.LEASE_TTL.multipliedBy(2).plusSeconds(1));
    frozen.open();
    idle.set(false);
  }

  /**
   * The first pod's {@code /metrics} served by a page that can stall, the others' by the pods
   * themselves.
   */
  private String firstPageStallable(SimulatedPod pod) {
    if (stallable != null) {
      return pod.httpAddress() + "/metrics";
    }
    stallable = StalledMetricsPage.start(pod);
    opened.add(stallable);
    return stallable.url();
  }

  /**
   * The load stopped (so that only {@code /metrics} can tell what happens next) and the first pod's
   * page stalled; once a scrape is held in it, the second pod put to sleep and the third restarted.
   * Records how long each took to be purged (at most the round the stalled page holds, a scrape
   * timeout, then the next round's wait, a reconcile interval, and the purge itself) and waits
   * until the held scrape has timed out.
   */
  private void slowMetrics() throws InterruptedException {
    idle.set(true);
    if (!caughtUp(Duration.ofSeconds(30))) {
      faultNotes.put("caught_up_before_the_fault", false);
    }
    long timeoutsBefore = figures.counted("kvindex.ingester.scrapes", "outcome", "timeout");
    long sleepsBefore = figures.purgesDone("sleep");
    long restartsBefore = figures.purgesDone("engine_restart");
    long unreachableBefore = figures.purgesDone("unreachable");
    stallable.stall(true);
    await(stallable::holding, Duration.ofSeconds(10), "a scrape held in the stalled page");
    List<SimulatedPod> pods = stack.fleet().pods();
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
      timedOut = figures.counted("kvindex.ingester.scrapes", "outcome", "timeout") - timeoutsBefore;
      if (sleepSeen < 0 && figures.purgesDone("sleep") > sleepsBefore) {
        sleepSeen = now - changed;
      }
      if (restartSeen < 0 && figures.purgesDone("engine_restart") > restartsBefore) {
        restartSeen = now - changed;
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    faultNotes.put("stalled_pod", pods.get(0).name());
    faultNotes.put("sleeping_pod", sleeper.name());
    faultNotes.put("restarted_pod", restarted.name());
    faultNotes.put("sleep_purged_after_ms", sleepSeen < 0 ? -1 : sleepSeen / 1_000_000);
    faultNotes.put("restart_purged_after_ms", restartSeen < 0 ? -1 : restartSeen / 1_000_000);
    faultNotes.put("bound_ms", bound.toMillis());
    faultNotes.put("stalled_pages_sent", stallable.stalledRequests());
    faultNotes.put("scrapes_timed_out", timedOut);
    faultNotes.put(
        "stalled_pod_purged_as_unreachable", figures.purgesDone("unreachable") > unreachableBefore);
    stallable.stall(false);
    sleeper.wakeUp();
    idle.set(false);
  }

  /** Asks for a resync of every pod and waits until each pod's evictions are inferred. */
  private void inferEvictions() throws InterruptedException {
    for (String pod : stack.fleet().names()) {
      stack
          .auditIndex()
          .requestResyncAsync(Stack.MODEL, pod, "chaos: infer evictions", Duration.ofMinutes(1))
          .join();
    }
    await(
        () -> stack.fleet().names().stream().allMatch(this::inferred),
        Duration.ofSeconds(30),
        "every pod's evictions inferred");
    faultNotes.put("pods_inferred", stack.fleet().names().size());
  }

  private boolean inferred(String pod) {
    try {
      return stack.auditIndex().evictionsInferredAsync(Stack.MODEL, pod).join().isPresent();
    } catch (RuntimeException e) {
      return false; // asked again
    }
  }

  /** Streams whose record names a batch left between two of its calls. */
  private long batchesInProgress() {
    return stack.auditInspector().read(Stack.MODEL, null).pods().stream()
        .flatMap(p -> p.ranks().stream())
        .filter(r -> r.batchInProgress() != null)
        .count();
  }

  // ---------------------------------------------------------------- heap-capped ring rebuild

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
  private ObjectNode executeHeapCapped(RingRebuild shape) throws InterruptedException {
    long began = System.nanoTime();
    String uri = startRedis();
    DemoConfig config =
        DemoConfig.builder()
            .redisUri(uri)
            .pods(shape.pods())
            .duration(shape.rebuildLimit())
            .requestsPerSecond(shape.rate())
            .seed(seed)
            .build();
    stack = Stack.start(config, shape.capacityBlocks(), List.of());
    opened.add(stack);
    figures = new StackFigures(stack::registries);
    log.info(
        "chaos {}: filling {} pods' rings with {} batches of {} blocks",
        scenario.cliName(),
        shape.pods(),
        shape.ringBatches(),
        shape.promptBlocks());
    long fillStarted = System.nanoTime();
    requests =
        RingFill.fill(stack.fleet().pods(), shape.ringBatches(), shape.promptBlocks(), seed, 64);
    long fillNanos = System.nanoTime() - fillStarted;

    Path logFile;
    try {
      logFile = Files.createTempDirectory("kvindex-chaos-").resolve("ingester.log");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make a directory for the ingester's log", e);
    }
    IngesterProcess ingester =
        IngesterProcess.start(List.of("-Xmx" + shape.heap()), ingesterArgs(uri), logFile);
    opened.add(ingester);
    HeapSampler heap = new HeapSampler(ingester.httpPort());
    opened.add(heap);
    RouterClient routers = new RouterClient(stack.routers());
    ChaosAuditor auditor =
        new ChaosAuditor(stack.fleet(), stack.auditIndex(), routers, requests, GRACE, seed);
    opened.add(auditor);
    auditor.watch();
    startLoad(shape.rate());
    auditor.start();
    sleep(shape.beforeFlush());
    log.info("chaos {}: fault: FLUSHALL", scenario.cliName());
    auditor.faultStarted();
    long faultStarted = System.nanoTime();
    connect(standalone).flushall();
    auditor.faultEnded();
    long faultNanos = System.nanoTime() - faultStarted;
    long behind = quiesce(shape.rebuildLimit(), ingester::alive);
    long rebuiltNanos = System.nanoTime() - faultStarted;
    sleep(GRACE);
    heap.sample();
    auditor.close();
    loading.set(false);
    load.join();

    ObjectNode out = JSON.createObjectNode();
    out.put("scenario", scenario.cliName());
    out.put("description", scenario.description);
    out.put("topology", "standalone");
    out.put("strict", scenario.strict);
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
    out.put("requests_served", served.get());
    out.put("requests_refused_by_pods", refused.get());
    auditor.writeTo(out);
    out.put("batches_lost", behind);
    out.put("fenced_writes", heap.lastTotal("kvindex_ingester_fenced_total"));
    out.put("real_errors_surfaced", heap.lastTotal("kvindex_redis_errors_total"));
    out.set("purges", JSON.valueToTree(heap.last("kvindex_ingester_purges_total")));
    out.set("replays", JSON.valueToTree(heap.last("kvindex_ingester_replays_total")));
    out.set(
        "live_batches_dropped",
        JSON.valueToTree(heap.last("kvindex_ingester_batches_dropped_total")));
    out.put("replay_waits", heap.lastTotal("kvindex_ingester_replay_waits_total"));
    ObjectNode memory = out.putObject("heap");
    heap.writeTo(memory);
    memory.put("ingester_alive_at_end", ingester.alive());
    memory.put("ingester_exit_code", ingester.exitCode());
    memory.put("out_of_memory", ingester.ranOutOfMemory());
    memory.put("ingester_log", logFile.toString());
    Auditor.Accuracy accuracy =
        new Auditor(stack.auditIndex(), stack.auditInspector(), routers, stack.fleet(), requests)
            .audit();
    out.put("quiescence_pods_exact_pct", percent(accuracy.podFraction()));
    out.put("quiescence_lookups_exact_pct", percent(accuracy.lookups().fraction()));
    if (!accuracy.wrongPods().isEmpty()) {
      out.set("quiescence_wrong_pods", JSON.valueToTree(accuracy.wrongPods()));
    }
    out.put("elapsed_s", Math.round((System.nanoTime() - began) / 1e8) / 10.0);
    return out;
  }

  /** The separate ingester's command line: the stack's index and pods, the demo's timings. */
  private List<String> ingesterArgs(String redisUri) {
    List<String> args = new ArrayList<>();
    args.add("--redis-uri=" + redisUri);
    args.add("--index-name=" + stack.indexName());
    args.add("--replica-id=ingester-heap-capped");
    args.add("--lease-ttl=" + Stack.LEASE_TTL.toMillis() + "ms");
    args.add("--reconcile-interval=500ms");
    args.add("--idle-catch-up=1s");
    args.add("--replay-idle-timeout=" + Stack.REPLAY_IDLE_TIMEOUT.toMillis() + "ms");
    for (PodSpec p : stack.podSpecs()) {
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

  // ---------------------------------------------------------------- quiescence and figures

  /** Whether every pod's stream applied every batch published, within {@code limit}. */
  private boolean caughtUp(Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    do {
      if (behind() == 0) {
        return true;
      }
      TimeUnit.MILLISECONDS.sleep(100);
    } while (System.nanoTime() < deadline);
    return false;
  }

  /** Batches published and neither applied nor covered by a purge, over every pod. */
  private long behind() {
    long behind = 0;
    for (SimulatedPod p : stack.fleet().pods()) {
      long last = p.nextSequence(0) - 1;
      behind += Math.max(0, last - stack.watermark(p.name()));
    }
    return behind;
  }

  /**
   * Waits until every pod's stream has applied (or purged past) its last batch, at most {@code
   * limit} and while {@code worthIt} holds; returns the batches still neither applied nor covered
   * by a purge when the wait ends.
   */
  private long quiesce(Duration limit, BooleanSupplier worthIt) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    long logged = System.nanoTime();
    long behind;
    do {
      behind = behind();
      if (behind == 0 || !worthIt.getAsBoolean()) {
        break;
      }
      if (System.nanoTime() - logged > TimeUnit.SECONDS.toNanos(15)) {
        logged = System.nanoTime();
        log.info("chaos {}: {} batches not applied yet", scenario.cliName(), behind);
      }
      TimeUnit.MILLISECONDS.sleep(200);
    } while (System.nanoTime() < deadline);
    sleep(GRACE); // the last batches' lookups settle
    return behind;
  }

  private static double percent(double fraction) {
    return Math.round(fraction * 1000) / 10.0;
  }

  private static void sleep(Duration d) throws InterruptedException {
    TimeUnit.NANOSECONDS.sleep(d.toNanos());
  }

  private static void await(BooleanSupplier condition, Duration limit, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("gave up waiting " + limit + " for " + what);
      }
      TimeUnit.MILLISECONDS.sleep(100);
    }
  }

  @Override
  public void close() {
    loading.set(false);
    for (int i = opened.size() - 1; i >= 0; i--) {
      try {
        opened.get(i).close();
      } catch (Exception e) {
        log.warn(
            "chaos {}: closing {} failed: {}", scenario.cliName(), opened.get(i), e.toString());
      }
    }
  }
}
