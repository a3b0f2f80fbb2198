package io.kvindex.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.Demo;
import io.kvindex.demo.DemoConfig;
import io.kvindex.demo.DemoReport;
import io.kvindex.demo.Policy;
import io.kvindex.demo.RouterClient;
import io.kvindex.demo.Run;
import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.load.TimedRequest;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The chaos scenario that runs the demo itself ({@link Demo}: its workload, its midway reset,
 * restart and ingester kill, its quiescence, audit, baselines, summary and cleanup) on a Redis
 * Cluster of 3 primaries and 3 replicas ({@code cluster-node-timeout} 2000, AOF on, {@code
 * noeviction}), and kills the primary holding the index's group with SIGKILL {@link #KILL_AT} of
 * the way through the routing (18 s of the demo's default 40 s), never to restart it: a lost host.
 * A {@link ChaosAuditor} checks router answers from the end of the warm-up on; the fault runs from
 * the kill until the replica is promoted and the demo's own ingester kill has settled (its lease
 * TTL and a second after it), so that the non-strict goal (no false positive past 2 s after the
 * fault) covers the whole sequence. Not thread-safe: one run, on the caller's thread and one
 * watcher.
 */
final class ChaosDemoRun implements Demo.Observer {
  private static final Logger log = LoggerFactory.getLogger(ChaosDemoRun.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Where in the routing the primary dies: 18 s of the demo's default 40 s. */
  static final double KILL_AT = 18.0 / 40;

  private static final Duration PROMOTION_LIMIT = Duration.ofSeconds(30);

  private final ChaosRun.Timings timings;
  private final long seed;
  private final LocalRedisCluster cluster;
  private final ObjectNode faultNotes = JSON.createObjectNode();
  private List<InferenceRequest> requests;
  private ChaosAuditor auditor;
  private StackFigures figures;
  private long realBefore;
  private long routingStarted;
  private Duration length;
  private final ObjectNode atQuiescence = JSON.createObjectNode();
  private String indexName;
  private Thread watcher;

  private ChaosDemoRun(ChaosRun.Timings timings, long seed, LocalRedisCluster cluster) {
    this.timings = timings;
    this.seed = seed;
    this.cluster = cluster;
  }

  /** Runs the scenario on a cluster of its own and returns its figures. */
  static ObjectNode run(
      ChaosScenario scenario, ChaosRun.Timings timings, long seed, PrintWriter out)
      throws InterruptedException {
    long began = System.nanoTime();
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder()
            .nodeTimeout(Duration.ofMillis(2000))
            .setting("appendonly", "yes")
            .setting("maxmemory-policy", "noeviction")
            .start()) {
      ObjectNode r = new ChaosDemoRun(timings, seed, cluster).execute(scenario, out);
      r.put("elapsed_s", Math.round((System.nanoTime() - began) / 1e8) / 10.0);
      return r;
    }
  }

  private ObjectNode execute(ChaosScenario scenario, PrintWriter out) throws InterruptedException {
    String uri =
        "redis-cluster://"
            + cluster.seedUris().stream()
                .map(u -> u.getHost() + ":" + u.getPort())
                .collect(Collectors.joining(","));
    DemoConfig config =
        DemoConfig.builder()
            .redisUri(uri)
            .pods(timings.pods())
            .duration(timings.warm().plus(timings.fault()).plus(timings.after()))
            .requestsPerSecond(timings.rate())
            .seed(seed)
            .build();
    requests = Workloads.requests(config).stream().map(TimedRequest::request).toList();
    DemoReport report;
    try {
      report = Demo.run(config, new PrintWriter(new StringWriter()), this);
    } finally {
      stopWatcher();
      if (auditor != null) {
        auditor.close();
      }
    }
    String summary = report.render();
    out.print(summary.indent(4));
    out.flush();

    ObjectNode r = JSON.createObjectNode();
    r.put("scenario", scenario.cliName());
    r.put("description", scenario.description);
    r.put("topology", scenario.topology.name().toLowerCase(Locale.ROOT));
    r.put("strict", scenario.strict);
    r.put("fault_ms", faultNotes.path("fault_ms").asLong());
    r.put("requests_served", report.routed());
    r.put("requests_refused_by_pods", report.refused());
    auditor.writeTo(r);
    r.setAll(atQuiescence);
    r.put("quiescence_pods_exact_pct", percent(report.podAccuracy()));
    r.put("quiescence_lookups_exact_pct", percent(report.lookupAccuracy()));
    r.put("demo_exit_code", report.exitCode());
    r.set("demo_problems", JSON.valueToTree(report.problems()));
    r.put("demo_kvindex_hit_rate_pct", percent(report.hitRate(Policy.KVINDEX)));
    r.put("demo_round_robin_hit_rate_pct", percent(report.hitRate(Policy.ROUND_ROBIN)));
    r.put("demo_kvindex_over_oracle_pct", percent(report.oracleRatio()));
    r.put("demo_cleanup_keys_deleted", report.cleanup().keysDeleted());
    if (report.cleanup().failed()) {
      r.put("demo_cleanup_problem", report.cleanup().problem());
    }
    r.put("keys_left_on_the_live_primaries", keysLeft());
    r.set("fault", faultNotes);
    r.put("demo_summary", summary);
    return r;
  }

  // ---------------------------------------------------------------- the demo's steps

  @Override
  public void routing(Stack stack, Run run, Duration length) {
    this.length = length;
    this.indexName = stack.indexName();
    figures = new StackFigures(stack::registries);
    realBefore = figures.counted("kvindex.redis.errors", null, null);
    auditor =
        new ChaosAuditor(
            stack.fleet(),
            stack.auditIndex(),
            new RouterClient(stack.routers()),
            requests,
            ChaosRun.GRACE,
            seed);
    auditor.watch(); // the truth from the start of the routing, the checks after the warm-up
    double warm = (double) timings.warm().toNanos() / length.toNanos();
    run.atFractionOfLimit(warm, "audit", auditor::start)
        .atFractionOfLimit(KILL_AT, "primary-lost", () -> killIndexPrimary(stack));
    routingStarted = System.nanoTime();
  }

  @Override
  public void quiesced(Stack stack) {
    try {
      stopWatcher();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    auditor.close();
    long behind = 0;
    for (SimulatedPod p : stack.fleet().pods()) {
      behind += Math.max(0, p.nextSequence(0) - 1 - stack.watermark(p.name()));
    }
    // Read while the stack is up, as the other scenarios do: closing it is not part of the run.
    ObjectNode r = atQuiescence;
    r.put("batches_lost", behind);
    r.put("real_errors_surfaced", figures.counted("kvindex.redis.errors", null, null) - realBefore);
    r.set("real_errors", figures.realErrors());
    r.put("fenced_writes", figures.counted("kvindex.ingester.fenced", null, null));
    r.set("purges", figures.purgesByReason());
    r.put("ingest_lag_max_ms", Math.round(figures.lagMaxMillis()));
  }

  // ---------------------------------------------------------------- the fault

  /**
   * Kills the primary serving the index's group (on the run's thread: SIGKILL returns at once), and
   * leaves a watcher to see the replica promoted and the fault end.
   */
  private void killIndexPrimary(Stack stack) {
    int slot = SlotHash.getSlot(new KeySchema(stack.indexName(), 1).blocksKey(0));
    ClusterNode primary = cluster.ownerOf(slot);
    faultNotes.put("killed", primary.uri().toString());
    auditor.faultStarted();
    long killed = System.nanoTime();
    primary.kill();
    log.info("chaos: killed the index's primary {} for good", primary.uri());
    // The demo's own ingester kill comes later in the run; the fault has settled once its leases
    // have expired and moved.
    long settled =
        routingStarted
            + (long) (Demo.KILL_AT * length.toNanos())
            + Stack.LEASE_TTL.plusSeconds(1).toNanos();
    watcher = new Thread(() -> watch(slot, primary, killed, settled), "chaos-promotion-watch");
    watcher.setDaemon(true);
    watcher.start();
  }

  private void watch(int slot, ClusterNode killed, long killedAt, long settled) {
    try {
      long deadline = killedAt + PROMOTION_LIMIT.toNanos();
      ClusterNode owner = ownerOf(slot);
      while ((owner == null || owner.uri().equals(killed.uri())) && System.nanoTime() < deadline) {
        TimeUnit.MILLISECONDS.sleep(100);
        owner = ownerOf(slot);
      }
      long promoted = System.nanoTime();
      synchronized (faultNotes) {
        if (owner != null && !owner.uri().equals(killed.uri())) {
          faultNotes.put("promoted", owner.uri().toString());
          faultNotes.put("promoted_after_ms", TimeUnit.NANOSECONDS.toMillis(promoted - killedAt));
        } else {
          faultNotes.put("promoted", "none within " + PROMOTION_LIMIT.toSeconds() + " s");
        }
      }
      long rest = settled - System.nanoTime();
      if (rest > 0) {
        TimeUnit.NANOSECONDS.sleep(rest);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      auditor.faultEnded();
      synchronized (faultNotes) {
        faultNotes.put("fault_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt));
      }
    }
  }

  /** The slot's owner as a running node reports it, or null while none answers. */
  private ClusterNode ownerOf(int slot) {
    try {
      return cluster.ownerOf(slot);
    } catch (RuntimeException e) {
      return null;
    }
  }

  private void stopWatcher() throws InterruptedException {
    if (watcher != null) {
      watcher.interrupt();
      watcher.join(TimeUnit.SECONDS.toMillis(5));
      watcher = null;
    }
  }

  // ---------------------------------------------------------------- after the run

  /** The index's keys on the primaries running now, each scanned on its own. */
  private long keysLeft() {
    String pattern = KeySchema.keyPattern(indexName);
    long keys = 0;
    for (ClusterNode p : cluster.primaries()) {
      RedisClient client = RedisClient.create(RedisURI.create(p.host(), p.port()));
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        keys += count(c.sync(), pattern);
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    }
    return keys;
  }

  private static long count(RedisCommands<String, String> redis, String pattern) {
    ScanArgs match = ScanArgs.Builder.matches(pattern).limit(500);
    KeyScanCursor<String> page = redis.scan(match);
    long n = page.getKeys().size();
    while (!page.isFinished()) {
      page = redis.scan(ScanCursor.of(page.getCursor()), match);
      n += page.getKeys().size();
    }
    return n;
  }

  private static double percent(double fraction) {
    return Math.round(fraction * 1000) / 10.0;
  }
}
