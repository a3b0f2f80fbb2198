package io.kvindex.demo;

import io.kvindex.epp.Endpoint;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Gate;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.PickPolicy;
import io.kvindex.simulator.SimulatedPod;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.function.Function;

/**
 * Everything the kvindex run starts: Redis (unless given), the simulated pods, two ingester
 * replicas and two router replicas ({@link RouterReplicas}), each with its own Redis connections,
 * plus the auditor's own read-only view of the index. {@link #close()} ends all of it, in reverse
 * order, and last deletes the run's keys from a Redis the demo was given ({@link #cleanup()} says
 * how that went). Not thread-safe: one thread drives it.
 */
public final class Stack implements AutoCloseable {
  public static final String MODEL = Workloads.MODEL;
  public static final String HASH_SEED = "42";
  static final int INGESTERS = 2;
  static final int ROUTERS = 2;
  public static final Duration LEASE_TTL = Duration.ofSeconds(3);
  static final Duration LOOKUP_BUDGET = Duration.ofMillis(50);

  /**
   * The routers' resync interval with the closed loop on: short, so that a pod found drifting in a
   * demo run of a minute or two is resynced (and its evictions inferred) within seconds.
   */
  static final Duration RESYNC_INTERVAL = Duration.ofSeconds(5);

  public static final Duration REPLAY_IDLE_TIMEOUT = Duration.ofSeconds(10);

  /** How often the ingesters scrape their pods' {@code /metrics}. */
  public static final Duration RECONCILE_INTERVAL = Duration.ofMillis(500);

  /** The longest one scrape may take (the ingesters' default). */
  public static final Duration SCRAPE_TIMEOUT = Duration.ofSeconds(2);

  private final Deque<AutoCloseable> opened = new ArrayDeque<>();
  // A fresh index name per run: a shared Redis keeps other indexes, and a rerun starts clean.
  private final String indexName = "demo-" + UUID.randomUUID().toString().substring(0, 8);
  private String redisUri;
  private boolean embeddedRedis;
  private Fleet fleet;
  private final Map<String, Ingester> ingesters = new LinkedHashMap<>();

  /** Each replica's fault hook: closing it freezes the replica before its next write. */
  private final Map<String, Gate> gates = new LinkedHashMap<>();

  private final List<String> killed = new ArrayList<>();
  private final RouterMeters routerMeters = new RouterMeters();

  /** The routers, pickers and embedded routers; set once Redis is known. */
  private RouterReplicas routing;

  private RedisConnector auditConnector;
  private PrefixIndex auditIndex;
  private Cleanup cleanup = Cleanup.NONE;
  private List<Integer> applyChunkBlocks;
  private Function<SimulatedPod, String> metricsUrls = Fleet::ownMetricsUrl;
  private Map<String, String> podMetricsUrls = Map.of();

  private PickPolicy pickPolicy = PickPolicy.estimatedTtft();

  private Stack() {}

  /** Starts everything; on a failure, ends what had started and rethrows. */
  public static Stack start(DemoConfig config, int capacityBlocks) {
    return start(
        config,
        capacityBlocks,
        Collections.nCopies(INGESTERS, PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS));
  }

  /**
   * {@link #start(DemoConfig, int)} with each ingester's blocks per apply call ({@code
   * ingester-1}'s first): as many ingester replicas in this process as the list has (none: the
   * caller runs its own, on {@link #podSpecs()}).
   */
  public static Stack start(DemoConfig config, int capacityBlocks, List<Integer> applyChunkBlocks) {
    return start(config, capacityBlocks, applyChunkBlocks, Fleet::ownMetricsUrl);
  }

  /**
   * {@link #start(DemoConfig, int, List)} with the URL the ingesters scrape for each pod's {@code
   * /metrics} (by default the pod's own endpoint), asked once per pod before the ingesters start.
   */
  public static Stack start(
      DemoConfig config,
      int capacityBlocks,
      List<Integer> applyChunkBlocks,
      Function<SimulatedPod, String> metricsUrls) {
    return start(config, capacityBlocks, applyChunkBlocks, metricsUrls, PickPolicy.estimatedTtft());
  }

  /** {@link #start(DemoConfig, int)} with the routers' pick policy. */
  public static Stack start(DemoConfig config, int capacityBlocks, PickPolicy pickPolicy) {
    return start(
        config,
        capacityBlocks,
        Collections.nCopies(INGESTERS, PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS),
        Fleet::ownMetricsUrl,
        pickPolicy);
  }

  private static Stack start(
      DemoConfig config,
      int capacityBlocks,
      List<Integer> applyChunkBlocks,
      Function<SimulatedPod, String> metricsUrls,
      PickPolicy pickPolicy) {
    Stack stack = new Stack();
    stack.pickPolicy = pickPolicy;
    stack.applyChunkBlocks = List.copyOf(applyChunkBlocks);
    stack.metricsUrls = metricsUrls;
    try {
      stack.open(config, capacityBlocks);
      return stack;
    } catch (RuntimeException e) {
      try {
        stack.close();
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  private void open(DemoConfig config, int capacityBlocks) {
    if (config.redisUri() == null) {
      LocalRedis redis = LocalRedis.builder().setting("maxmemory-policy", "noeviction").start();
      opened.push(redis);
      redisUri = redis.uri().toString();
      embeddedRedis = true;
    } else {
      redisUri = config.redisUri();
      // Closed last, after the services: the demo leaves nothing in a Redis it was given.
      RedisConnector connector =
          RedisConnector.builder().uri(redisUri).meterRegistry(new SimpleMeterRegistry()).build();
      opened.push(connector);
      opened.push(() -> cleanup = new IndexKeys(connector, indexName).cleanUp());
    }
    Duration resync = config.closedLoop() ? RESYNC_INTERVAL : Duration.ZERO;
    routing =
        new RouterReplicas(redisUri, indexName, pickPolicy, resync, routerMeters, opened::push);
    fleet = Fleet.start(config, capacityBlocks, true);
    opened.push(fleet);
    Map<String, String> urls = new LinkedHashMap<>();
    for (SimulatedPod pod : fleet.pods()) {
      urls.put(pod.name(), metricsUrls.apply(pod));
    }
    podMetricsUrls = Map.copyOf(urls);
    for (int i = 1; i <= applyChunkBlocks.size(); i++) {
      startIngester("ingester-" + i, applyChunkBlocks.get(i - 1));
    }
    // Opened before the routers: it creates the index when no ingester of this process has.
    auditConnector =
        RedisConnector.builder().uri(redisUri).meterRegistry(new SimpleMeterRegistry()).build();
    opened.push(auditConnector);

    auditIndex =
        PrefixIndex.builder()
            .indexName(indexName)
            .lookupPolicy(RetryPolicy.defaults())
            .redis(auditConnector)
            .build();
    opened.push(auditIndex);
    for (int i = 1; i <= ROUTERS; i++) {
      routing.startRouter();
    }
    if (config.via() == DemoConfig.Via.EPP) {
      for (int i = 1; i <= ROUTERS; i++) {
        routing.startPicker(endpoints());
      }
    }
  }

  private void startIngester(String replica, int chunkBlocks) {
    IngesterConfig config =
        IngesterConfig.builder()
            .redisUri(redisUri)
            .indexName(indexName)
            .replicaId(replica)
            .httpHost("127.0.0.1")
            .httpPort(0)
            .leaseTtl(LEASE_TTL)
            .reconcileInterval(RECONCILE_INTERVAL)
            .scrapeTimeout(SCRAPE_TIMEOUT)
            .idleCatchUp(Duration.ofSeconds(1))
            // A loaded laptop can stall a replay for seconds; giving up purges a pod needlessly.
            .replayIdleTimeout(REPLAY_IDLE_TIMEOUT)
            .applyChunkBlocks(chunkBlocks)
            .pods(podSpecs())
            .build();
    Gate gate = new Gate();
    Ingester ingester = Ingester.start(config, gate);
    opened.push(ingester);
    ingesters.put(replica, ingester);
    gates.put(replica, gate);
  }

  /** The pods as the picker's candidates: each pod's name and its OpenAI endpoint's address. */
  List<Endpoint> endpoints() {
    return fleet.endpoints();
  }

  /** The endpoint pickers' gRPC addresses (none unless the run goes through them). */
  List<InetSocketAddress> pickers() {
    return routing.pickers();
  }

  public static ModelKeys modelKeys() {
    return ModelKeys.engine(HashAlgorithm.SHA256_CBOR, HASH_SEED, Workloads.BLOCK_SIZE);
  }

  /** What an ingester is told of each pod: its endpoints and metrics URL. */
  public List<PodSpec> podSpecs() {
    return fleet.podSpecs(podMetricsUrls);
  }

  /** Where Redis is, its password masked: for messages. */
  String redisUri() {
    return embeddedRedis ? redisUri + " (embedded)" : RedisConnector.masked(redisUri);
  }

  public String indexName() {
    return indexName;
  }

  public Fleet fleet() {
    return fleet;
  }

  /** The live ingester replicas by name. */
  public Map<String, Ingester> ingesters() {
    Map<String, Ingester> live = new LinkedHashMap<>(ingesters);
    killed.forEach(live::remove);
    return live;
  }

  /**
   * The gate {@code replica}'s loops pass before each write: closing it freezes the replica in
   * place, as a stopped process would be (SIGSTOP), until it is opened again.
   */
  public Gate gate(String replica) {
    return gates.get(replica);
  }

  public List<URI> routers() {
    return routing.routers();
  }

  /**
   * A router embedded in a gateway, as the library is used in a gateway's own process: the router
   * replicas' settings, and a load view shared through the index with every other router built with
   * one ({@code KvRouterBuilder.sharedLoad}). Closed with the stack.
   */
  KvRouter embeddedRouter(String id) {
    return routing.embedded(id);
  }

  /**
   * Over every router so far: lookups made, group lookups that read every block field instead of
   * segments, and those that read an overflowed segment's block fields (the demo's index has one
   * group).
   */
  IndexReads indexReads() {
    return routerMeters.indexReads();
  }

  /** Lookups that ran out of their budget (answered "index unavailable"), over every router. */
  long lookupsOutOfBudget() {
    return routerMeters.lookupsOutOfBudget();
  }

  /** Over every router: a counter's total by one of its tags (e.g. resync requests by outcome). */
  Map<String, Long> countedBy(String meter, String tag) {
    return routerMeters.countedBy(meter, tag);
  }

  /** Every router's and ingester's meter registry (fault drills sum counters over them). */
  public List<io.micrometer.core.instrument.MeterRegistry> registries() {
    List<io.micrometer.core.instrument.MeterRegistry> all = routerMeters.registries();
    ingesters.values().forEach(i -> all.add(i.meterRegistry()));
    return all;
  }

  /** Router lookups and how they read the index (see {@link #indexReads}). */
  record IndexReads(long lookups, long blockReads, long overflowReads) {}

  public PrefixIndex auditIndex() {
    return auditIndex;
  }

  /** What the index records about itself, read over the auditor's connection. */
  public RedisInspector auditInspector() {
    return RedisInspector.of(auditConnector, indexName);
  }

  /** The stream's applied watermark in Redis, or -1. */
  public long watermark(String pod) {
    OptionalLong w = auditIndex.watermark(StreamId.of(MODEL, pod));
    return w.isPresent() ? w.getAsLong() : -1;
  }

  /** Ends one ingester as a crash would: its leases are left to expire. */
  public void kill(String replica) {
    Ingester ingester = ingesters.get(replica);
    if (ingester == null || killed.contains(replica)) {
      throw new IllegalArgumentException("no live ingester " + replica);
    }
    ingester.kill();
    killed.add(replica);
  }

  /**
   * What closing did to a Redis the demo was given: nothing yet (or an embedded Redis, ended with
   * the run), the keys deleted, or why not and what to run by hand. Immutable.
   *
   * @param given whether the demo ran on a Redis it was given (one it must leave as it found it)
   * @param keysDeleted the keys deleted
   * @param problem why they could not all be deleted, with the command that finishes the job; null
   *     when nothing failed
   */
  public record Cleanup(boolean given, long keysDeleted, String problem) {
    static final Cleanup NONE = new Cleanup(false, 0, null);

    static Cleanup deleted(long keys) {
      return new Cleanup(true, keys, null);
    }

    static Cleanup failed(String problem) {
      return new Cleanup(true, 0, problem);
    }

    public boolean failed() {
      return problem != null;
    }
  }

  /** What closing did to a Redis the demo was given; {@link Cleanup#NONE} before {@link #close}. */
  public Cleanup cleanup() {
    return cleanup;
  }

  @Override
  public void close() {
    RuntimeException first = null;
    while (!opened.isEmpty()) {
      try {
        opened.pop().close();
      } catch (Exception e) {
        if (first == null) {
          first = new IllegalStateException("closing the demo stack failed", e);
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
