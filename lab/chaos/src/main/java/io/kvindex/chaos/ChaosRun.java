package io.kvindex.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Auditor;
import io.kvindex.demo.DemoConfig;
import io.kvindex.demo.RouterClient;
import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.redis.KeySchema;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

  static final Duration QUIESCENCE_LIMIT = Duration.ofSeconds(60);

  /** The prefill each pod serves while an ingester is to be frozen between two of its calls. */
  static final int LONG_PREFILL_BLOCKS = 300;

  /**
   * The ingesters' blocks per apply call in the mid-batch scenario: the one frozen packs a batch in
   * smaller calls than the one that takes it over, so a resume by chunk index would skip blocks.
   */
  static final List<Integer> MID_BATCH_CHUNK_BLOCKS = List.of(64, 128);

  /**
   * The pods' capacity in the mid-batch scenario: room for the prefills without an eviction, so
   * that what the frozen ingester has not applied yet is only stores (late, never wrong).
   */
  static final int MID_BATCH_CAPACITY_BLOCKS = 16_384;

  static final ObjectMapper JSON = new ObjectMapper();

  /** The wait after each MIGRATE of the slot-migration scenario, while the keys are split. */
  static final Duration MIGRATE_PAUSE = Duration.ofMillis(100);

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

  final ChaosScenario scenario;
  final Timings timings;
  final long seed;
  final List<AutoCloseable> opened = new ArrayList<>();
  LocalRedis standalone;
  LocalRedisCluster cluster;
  LocalRedisSentinel sentinel;
  Stack stack;
  List<InferenceRequest> requests;
  final AtomicBoolean loading = new AtomicBoolean();
  final AtomicBoolean idle = new AtomicBoolean();
  final AtomicLong served = new AtomicLong();
  final AtomicLong refused = new AtomicLong();
  final ObjectNode faultNotes = JSON.createObjectNode();
  StackFigures figures;
  Thread load;
  StalledMetricsPage stallable;
  long resetsBeforeMigration;
  long lostBeforeMigration;

  private final ChaosFaults faults = new ChaosFaults(this);

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
      return RingRebuildRun.execute(
          this,
          timings.quick() ? RingRebuildRun.RingRebuild.QUICK : RingRebuildRun.RingRebuild.FULL);
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
                  faults::firstPageStallable);
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
    faults.inject();
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

  String startRedis() {
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
  RedisCommands<String, String> connect(RedisNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    opened.add(client::shutdown);
    StatefulRedisConnection<String, String> c = client.connect();
    opened.add(c);
    return c.sync();
  }

  /** A plain connection to one node with byte keys and values, closed with the run. */
  RedisCommands<byte[], byte[]> connectBytes(RedisNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    opened.add(client::shutdown);
    StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
    opened.add(c);
    return c.sync();
  }

  /** The cluster primary serving the index (its single group's hash tag) now. */
  ClusterNode indexPrimary() {
    byte[] blocks = new KeySchema(stack.indexName(), 1).blocksKey(0);
    return cluster.ownerOf(SlotHash.getSlot(blocks));
  }

  ClusterNode replicaOf(ClusterNode primary) {
    for (ClusterNode r : cluster.replicas()) {
      if (connect(r).info("replication").contains("master_port:" + primary.port())) {
        return r;
      }
    }
    throw new IllegalStateException("no replica of the index's primary " + primary.uri());
  }

  // ---------------------------------------------------------------- load

  void startLoad(double rate) {
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

  // ---------------------------------------------------------------- quiescence and figures

  /** Whether every pod's stream applied every batch published, within {@code limit}. */
  boolean caughtUp(Duration limit) throws InterruptedException {
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
  long behind() {
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
  long quiesce(Duration limit, BooleanSupplier worthIt) throws InterruptedException {
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

  static double percent(double fraction) {
    return Math.round(fraction * 1000) / 10.0;
  }

  static void sleep(Duration d) throws InterruptedException {
    TimeUnit.NANOSECONDS.sleep(d.toNanos());
  }

  static void await(BooleanSupplier condition, Duration limit, String what)
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
