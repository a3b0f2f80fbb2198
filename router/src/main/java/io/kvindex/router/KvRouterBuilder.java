package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.index.Tier;
import io.kvindex.redis.RedisConnector;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Configures a {@link KvRouter}. Each setter checks its argument at once. Not thread-safe; the
 * router it builds is.
 */
public final class KvRouterBuilder {
  /** The default of {@link #lookupBudget}. */
  public static final Duration DEFAULT_LOOKUP_BUDGET = Duration.ofMillis(5);

  /** The default of {@link #indexName}. */
  public static final String DEFAULT_INDEX_NAME = "default";

  /** The default of {@link #redisUri}. */
  public static final String DEFAULT_REDIS_URI = "redis://127.0.0.1:6379";

  /** The default of {@link #driftWindow}. */
  public static final int DEFAULT_DRIFT_WINDOW = 64;

  /** The default of {@link #driftThreshold}. */
  public static final double DEFAULT_DRIFT_THRESHOLD = 0.08;

  /** The default of {@link #resyncInterval}. */
  public static final Duration DEFAULT_RESYNC_INTERVAL = Duration.ofSeconds(30);

  /** The default of {@link #sharedLoadTtl}. */
  public static final Duration DEFAULT_SHARED_LOAD_TTL = Duration.ofSeconds(10);

  /** The default of {@link #sharedLoadMinAge}. */
  public static final Duration DEFAULT_SHARED_LOAD_MIN_AGE = Duration.ofMillis(5);

  private String redisUri = DEFAULT_REDIS_URI;
  private Path redisTlsCaFile;
  private int groups = 1;
  private String indexName = DEFAULT_INDEX_NAME;
  private final Map<String, ModelKeys> models = new LinkedHashMap<>();
  private ModelKeys defaultModelKeys;
  private Duration lookupBudget = DEFAULT_LOOKUP_BUDGET;
  private PickPolicy pickPolicy = PickPolicy.estimatedTtft();
  private MeterRegistry meterRegistry;
  private int driftWindow = DEFAULT_DRIFT_WINDOW;
  private double driftThreshold = DEFAULT_DRIFT_THRESHOLD;
  private Duration resyncInterval = DEFAULT_RESYNC_INTERVAL;
  private boolean adoptEngineKeys;
  private final Map<Tier, Double> tierWeights = new EnumMap<>(Tier.class);
  private boolean sharedLoad;
  private Duration sharedLoadTtl = DEFAULT_SHARED_LOAD_TTL;
  private Duration sharedLoadMinAge = DEFAULT_SHARED_LOAD_MIN_AGE;
  private String routerId;

  KvRouterBuilder() {}

  /**
   * Where Redis is: {@code redis://[user:password@]host:port[/db]} for one server ({@code
   * rediss://} for TLS), {@code redis-cluster://[user:password@]host1:port1,host2:port2} for a
   * cluster from seed nodes ({@code rediss-cluster://} for TLS), or {@code
   * redis-sentinel://[password@]s1:p1,s2:p2#master} for the primary a set of Sentinels names.
   * Default {@code redis://127.0.0.1:6379}.
   */
  public KvRouterBuilder redisUri(String uri) {
    this.redisUri = Check.notBlank(uri, "redisUri");
    return this;
  }

  /**
   * For {@code rediss} URIs: the PEM file of the CA certificates the server's certificate is
   * checked against, instead of the JVM's trust store. Default none.
   */
  public KvRouterBuilder redisTlsCaFile(Path caFile) {
    this.redisTlsCaFile = Check.notNull(caFile, "redisTlsCaFile");
    return this;
  }

  /**
   * A Redis Cluster, found through one or more seed node URIs ({@code redis://} or {@code
   * rediss://}, each with the same user and password).
   */
  public KvRouterBuilder clusterSeeds(List<String> seedUris) {
    List<String> copy = List.copyOf(Check.notNull(seedUris, "clusterSeeds"));
    if (copy.isEmpty()) {
      throw new IllegalArgumentException("clusterSeeds must name at least one node URI");
    }
    copy.forEach(uri -> Check.notBlank(uri, "cluster seed URI"));
    // The connector reads a comma-separated list of URIs, or a redis-cluster:// URI, as a cluster.
    this.redisUri = copy.size() == 1 ? asCluster(copy.get(0)) : String.join(",", copy);
    return this;
  }

  private static String asCluster(String uri) {
    String lower = uri.toLowerCase(java.util.Locale.ROOT);
    if (lower.startsWith("redis://") || lower.startsWith("rediss://")) {
      int colon = uri.indexOf(':');
      return uri.substring(0, colon) + "-cluster" + uri.substring(colon);
    }
    return uri;
  }

  /**
   * How many index groups the index spreads pods over; must equal the ingesters' setting (the count
   * is recorded in Redis and checked). Default 1.
   */
  public KvRouterBuilder groups(int groups) {
    this.groups = Check.atLeast(groups, 1, "groups");
    return this;
  }

  /** The index to read, as the ingesters name it. Default {@code default}. */
  public KvRouterBuilder indexName(String name) {
    this.indexName = Check.notBlank(name, "indexName");
    return this;
  }

  /** How the block keys of {@code model} are computed; must match the ingesters. */
  public KvRouterBuilder model(String model, ModelKeys keys) {
    models.put(Check.notBlank(model, "model"), Check.notNull(keys, "keys"));
    return this;
  }

  /** The key mode of models not configured by {@link #model}; default none (they are rejected). */
  public KvRouterBuilder defaultModelKeys(ModelKeys keys) {
    this.defaultModelKeys = Check.notNull(keys, "defaultModelKeys");
    return this;
  }

  /**
   * Whether a model is keyed as its engines hash when the ingesters' key check found them hashing
   * otherwise than this builder's keys for the model say (same key mode only); read again every 10
   * s per model, logged when it changes. Default false: the check only reports.
   */
  public KvRouterBuilder adoptEngineKeys(boolean adopt) {
    this.adoptEngineKeys = adopt;
    return this;
  }

  /**
   * The most time one lookup may take, retries included; past it the lookup answers "index
   * unavailable". Default 5 ms.
   */
  public KvRouterBuilder lookupBudget(Duration budget) {
    this.lookupBudget = Check.positive(budget, "lookupBudget");
    return this;
  }

  /** The policy of {@link KvRouter#pick}. Default {@link PickPolicy#estimatedTtft()}. */
  public KvRouterBuilder pickPolicy(PickPolicy policy) {
    this.pickPolicy = Check.notNull(policy, "pickPolicy");
    return this;
  }

  /**
   * A tier's weight in {@link io.kvindex.index.PodMatch#score()}, in [0, 1000]. Defaults GPU 1.0,
   * CPU 0.8, STORAGE 0.5, OTHER 0.5; a speculative block counts as GPU.
   */
  public KvRouterBuilder tierWeight(Tier tier, double weight) {
    tierWeights.put(Check.notNull(tier, "tier"), Check.between(weight, 0, 1000, "tier weight"));
    return this;
  }

  /**
   * How many of a pod's latest observed requests ({@link KvRouter#observe}) are judged together, 4
   * to 4096. Default 64.
   */
  public KvRouterBuilder driftWindow(int observations) {
    this.driftWindow = Check.between(observations, 4, 4096, "driftWindow");
    return this;
  }

  /**
   * The share of a full {@link #driftWindow} that must be over-predicted for the pod to be suspect
   * (and resynced), or under-predicted for it to be reported so, in (0, 1]. An eviction between
   * lookup and prefill, or the index's lag, errs now and then; this keeps those from adding up.
   * Default 0.08, 6 of 64: in the demo 0.2–0.4 % of requests are over-predicted when the engines
   * publish every eviction, and 6–7 % on average when they evict without publishing, some pods
   * less; 6 of 64 is far above the one (at 0.5 % a window of 64 holds 6 about once in a million)
   * and catches the pods of the other within a few hundred requests (at 7 of 64, some pods of a
   * silent-eviction run were never judged; at 0.5 none was).
   */
  public KvRouterBuilder driftThreshold(double share) {
    this.driftThreshold = Check.between(share, 0.01, 1.0, "driftThreshold");
    return this;
  }

  /**
   * How long a resync request for a suspect pod stands, keeping every router's next one out: a pod
   * is resynced at most once per interval. Zero turns resyncs off (suspects are still counted and
   * logged). Default 30 s. The ingester that owns a resynced pod's streams infers its engine's
   * evictions from then on when it can (engine keys, and an engine that reports its KV-cache
   * capacity); otherwise it purges the pod and replays its engine's ring, which loses the pod's
   * hottest prefixes (a prefix hit publishes nothing, so they predate the ring). A router asks only
   * for models it keys with engine keys; token-keyed models' suspects are reported
   * (docs/closed-loop.md).
   */
  public KvRouterBuilder resyncInterval(Duration interval) {
    Check.notNull(interval, "resyncInterval");
    this.resyncInterval =
        interval.isZero() ? Duration.ZERO : Check.atLeastOneMilli(interval, "resyncInterval");
    return this;
  }

  /**
   * Whether the router shares a load view with every router of the fleet through the index: the
   * requests each router counted with {@link KvRouter#started}, per pod, and their prompt tokens
   * not yet computed, read beside every lookup (pipelined with it: a pick stays one round trip) and
   * added to the load a pick is given. What makes many gateways route as well as one: each alone
   * sees only its own requests. Needs a Redis user that may {@code HGETALL} the {@code spec:load}
   * keys (docs/operations.md). Default false.
   */
  public KvRouterBuilder sharedLoad(boolean shared) {
    this.sharedLoad = shared;
    return this;
  }

  /**
   * How long a router's share of the shared load view stands without being rewritten (it is
   * rewritten every third of it): a router that dies leaves the view within this time. The routers'
   * clocks must agree to well within it. 300 ms to 10 min; default 10 s.
   */
  public KvRouterBuilder sharedLoadTtl(Duration ttl) {
    Check.notNull(ttl, "sharedLoadTtl");
    if (ttl.compareTo(Duration.ofMillis(300)) < 0 || ttl.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException(
          "sharedLoadTtl must be 300 ms to 10 min, got " + ttl + "; 10 s suits most fleets");
    }
    this.sharedLoadTtl = ttl;
    return this;
  }

  /**
   * How old the shared load view must be before a lookup reads it again: lookups within it use the
   * last view read (this router's own share is always current), and concurrent lookups share one
   * read in flight. Another router's change then reaches a pick within this time plus a round trip,
   * well below a request's time to first token; a read per lookup costs a busy router about a
   * quarter of its lookup rate (BENCHMARKS.md). 0 (a read per lookup, still one in flight) to 1 s;
   * default 5 ms.
   */
  public KvRouterBuilder sharedLoadMinAge(Duration age) {
    Check.notNull(age, "sharedLoadMinAge");
    if (age.isNegative() || age.compareTo(Duration.ofSeconds(1)) > 0) {
      throw new IllegalArgumentException(
          "sharedLoadMinAge must be 0 to 1 s, got " + age + "; 5 ms suits most fleets");
    }
    this.sharedLoadMinAge = age;
    return this;
  }

  /**
   * This router's name in the shared load view; unique in the fleet. Default the host's name, the
   * process id and a random suffix.
   */
  public KvRouterBuilder routerId(String id) {
    this.routerId = Check.notBlank(id, "routerId");
    return this;
  }

  /** Where the router's metrics go. Default a private registry nobody reads. */
  public KvRouterBuilder meterRegistry(MeterRegistry registry) {
    this.meterRegistry = Check.notNull(registry, "meterRegistry");
    return this;
  }

  /**
   * Connects to Redis and returns the router. A router runs only the index's scripts that ingesters
   * loaded (EVALSHA, never EVAL or SCRIPT LOAD), so it cannot create an index: start an ingester of
   * the index first.
   *
   * @throws io.kvindex.common.KvIndexException if Redis cannot be reached or refuses the login
   * @throws io.kvindex.index.IndexNotFoundException if the index is not in Redis and no ingester
   *     loaded its scripts within the write retry budget (10 s)
   */
  public KvRouter build() {
    return RedisKvRouter.create(config());
  }

  RouterConfig config() {
    return new RouterConfig(
        redisUri,
        redisTlsCaFile,
        groups,
        indexName,
        models,
        defaultModelKeys,
        lookupBudget,
        pickPolicy,
        meterRegistry == null ? new SimpleMeterRegistry() : meterRegistry,
        tierWeights,
        driftWindow,
        driftThreshold,
        resyncInterval,
        adoptEngineKeys,
        sharedLoad,
        sharedLoadTtl,
        sharedLoadMinAge,
        routerId == null ? defaultRouterId() : routerId);
  }

  private static String defaultRouterId() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "unknown-host";
    }
    return host
        + "/"
        + ProcessHandle.current().pid()
        + "/"
        + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong());
  }

  /** The immutable result of a builder. */
  record RouterConfig(
      String redisUri,
      Path redisTlsCaFile,
      int groups,
      String indexName,
      Map<String, ModelKeys> models,
      ModelKeys defaultModelKeys,
      Duration lookupBudget,
      PickPolicy pickPolicy,
      MeterRegistry meterRegistry,
      Map<Tier, Double> tierWeights,
      int driftWindow,
      double driftThreshold,
      Duration resyncInterval,
      boolean adoptEngineKeys,
      boolean sharedLoad,
      Duration sharedLoadTtl,
      Duration sharedLoadMinAge,
      String routerId) {
    RouterConfig {
      tierWeights = Map.copyOf(tierWeights);
      models = Map.copyOf(models);
    }

    /** Every field, the Redis URI with its password masked. */
    @Override
    public String toString() {
      return "RouterConfig[redisUri="
          + RedisConnector.masked(redisUri)
          + ", redisTlsCaFile="
          + redisTlsCaFile
          + ", groups="
          + groups
          + ", indexName="
          + indexName
          + ", models="
          + models
          + ", defaultModelKeys="
          + defaultModelKeys
          + ", lookupBudget="
          + lookupBudget
          + ", pickPolicy="
          + pickPolicy
          + ", tierWeights="
          + tierWeights
          + ", driftWindow="
          + driftWindow
          + ", driftThreshold="
          + driftThreshold
          + ", resyncInterval="
          + resyncInterval
          + ", adoptEngineKeys="
          + adoptEngineKeys
          + ", sharedLoad="
          + sharedLoad
          + ", sharedLoadTtl="
          + sharedLoadTtl
          + ", sharedLoadMinAge="
          + sharedLoadMinAge
          + ", routerId="
          + routerId
          + "]";
    }

    /** The refusal of a model that has no key mode (none configured, no default). */
    IllegalArgumentException unconfigured(String model) {
      return new IllegalArgumentException(
          "model '"
              + model
              + "' has no key mode configured; configure it (engine or token keys) or set a"
              + " default key mode. Configured models: "
              + models.keySet());
    }
  }
}
