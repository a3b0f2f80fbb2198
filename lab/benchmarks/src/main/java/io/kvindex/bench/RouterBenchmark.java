package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.Pick;
import io.kvindex.router.Scores;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench router}: {@link KvRouter#score} as a gateway calls it (token ids in: block
 * hashing, one HMGET per index group, decoding), with 1 and 8 client threads sharing one router,
 * against a standalone server and a 3-primary cluster (local redis-server processes on loopback);
 * the same from precomputed block keys; and, in the same run, its ceiling: the reads the router
 * sent for each prompt, captured from Redis ({@link CapturedReads}) and replayed raw from as many
 * threads. Block hashing is measured apart ({@link HashingCost}). The index is filled through
 * {@link PrefixIndex#apply} with the {@link LookupFixture} distribution, keyed by the router's own
 * block keys. Then the same again with a route recorded for every prompt, as a gateway that records
 * each route does ({@code routed}): what the lookups read (fields per HMGET, per key) and their
 * rate.
 *
 * <p>Run: {@code scripts/kvindex bench router [--quick] --out FILE}. Not thread-safe.
 */
final class RouterBenchmark {
  private static final String INDEX = "bench-router";
  private static final Logger log = LoggerFactory.getLogger(RouterBenchmark.class);
  private static final int STANDALONE_GROUPS = 1;
  private static final int CLUSTER_GROUPS = 8;
  private static final int PODS = 64;
  private static final int PROMPT_BLOCKS = 256;
  private static final int BLOCK_SIZE = 16;
  private static final String HASH = "sha256_cbor";
  private static final Duration LOOKUP_BUDGET = Duration.ofMillis(250);

  /**
   * How long the routes of the routed run stand: the longest a route may (recording refuses more);
   * about as long as a full run's routed measurements take.
   */
  private static final Duration ROUTE_TTL = PrefixIndex.MAX_SPECULATIVE_TTL;

  private final BenchOptions options;

  /** Block hashing alone, measured once. */
  private final HashingCost hashing = new HashingCost();

  private RouterBenchmark(BenchOptions options) {
    this.options = options;
  }

  static ObjectNode run(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException(
          "bench router starts its own standalone server and cluster; it takes no --redis");
    }
    long start = System.nanoTime();
    ObjectNode json = Reports.header("router", options);
    RouterBenchmark bench = new RouterBenchmark(options);
    bench.describe(json.putObject("setup"));
    try (LocalRedis redis = LocalRedis.start()) {
      ((ObjectNode) json.get("setup")).put("redis_version", version(redis.uri().toString()));
      bench.topology(json.putObject("standalone"), List.of(redis.uri()), STANDALONE_GROUPS);
    }
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder().primaries(3).replicasPerPrimary(0).start()) {
      bench.topology(json.putObject("cluster"), cluster.seedUris(), CLUSTER_GROUPS);
    }
    Reports.finish(json, start);
    return json;
  }

  private long entries() {
    return options.quick() ? 50_000 : 1_000_000;
  }

  private Duration warmup() {
    return options.quick() ? Duration.ofSeconds(1) : Duration.ofSeconds(3);
  }

  private Duration measured() {
    return options.quick() ? Duration.ofSeconds(2) : Duration.ofSeconds(10);
  }

  private void describe(ObjectNode setup) {
    setup.put("lookup_path", "KvRouter.score(model, lora, tokenIds, pods): threads_1, threads_8");
    setup.put(
        "prehashed",
        "KvRouter.score(model, blockKeys, pods), the keys hashed before the run: the library's"
            + " lookup without hashing");
    setup.put(
        "raw",
        "the ceiling: the HMGETs and GETs the router sent for each prompt, captured with MONITOR"
            + " (same keys, same fields, same nodes), replayed through one lettuce connection per"
            + " node, all of a prompt's reads in flight at once; no hashing, no retry wrapper, no"
            + " decoding");
    setup.put(
        "ratios", "lookups_per_s of the router (from tokens) and prehashed over raw, same run");
    setup.put(
        "hashing",
        "KvRouter.blockKeys on one thread, measured apart (standalone.hashing); cores = mean µs"
            + " x scores/s");
    setup.put("prompt_blocks", PROMPT_BLOCKS);
    setup.put("prompt_tokens", PROMPT_BLOCKS * BLOCK_SIZE);
    setup.put("key_mode", "engine " + HASH + ", block size " + BLOCK_SIZE);
    setup.put("pods", PODS);
    setup.put("candidates", PODS);
    setup.put("min_entries", entries());
    setup.put(
        "depth_distribution",
        "per prompt: 8 random pods hold all 256 blocks, 24 a uniformly random prefix, 32 none");
    setup.put(
        "standalone", "one local redis-server on loopback, index groups " + STANDALONE_GROUPS);
    setup.put(
        "cluster",
        "local Redis Cluster, 3 primaries, no replicas, on loopback; index groups "
            + CLUSTER_GROUPS
            + " (one HMGET per group per lookup, all in flight at once)");
    setup.put("clients", "one KvRouter shared by all client threads");
    setup.put(
        "lookup_budget_ms",
        LOOKUP_BUDGET.toMillis() + " (not the 5 ms default, so every lookup is measured in full)");
    setup.put(
        "routed",
        "the same after a route was recorded for every prompt to the pod the pick chose (the"
            + " prompt's 256 blocks, TTL "
            + ROUTE_TTL.toMinutes()
            + " min), as a gateway recording each route leaves the index: captured_routed says"
            + " what lookups then read, routed the router's and prehashed rates, routed.ratios"
            + " routed over the run without routes");
    setup.put(
        "shared_load",
        "the routed run's lookups from tokens by a router with the shared load view, while "
            + SHARING_GATEWAYS
            + " other routers each count a request on every pod (a view of "
            + SHARING_GATEWAYS * PODS
            + " fields, read with every lookup); shared_load.ratios over the routed run");
    setup.put("warmup_s", warmup().toSeconds());
    setup.put("measured_s", measured().toSeconds());
  }

  private void topology(ObjectNode json, List<URI> nodes, int groups) {
    List<String> uris = nodes.stream().map(URI::toString).toList();
    fill(
        String.join(",", uris),
        groups,
        null); // an ingester's index creates it: a router never does
    try (KvRouter router = router(uris, groups)) {
      List<int[]> prompts = new ArrayList<>();
      List<long[]> keys = new ArrayList<>();
      LookupFixture fixture =
          LookupFixture.generate(
              7,
              PODS,
              entries(),
              random -> {
                int[] tokens = randomTokens(random);
                prompts.add(tokens);
                keys.add(router.blockKeys(IndexBenchmark.MODEL, null, null, tokens));
                return keys.get(keys.size() - 1);
              });
      fill(String.join(",", uris), groups, fixture);
      json.put("entries", fixture.entries);
      json.put("prompts", prompts.size());
      json.put("groups", groups);
      if (!hashing.measured()) {
        hashing.measure(
            json.putObject("hashing"), router, prompts, warmup().plus(measured()).dividedBy(2));
      }
      for (int[] prompt : prompts) {
        router.score(IndexBenchmark.MODEL, null, prompt, fixture.pods); // records cached
      }
      try (CapturedReads raw =
          CapturedReads.capture(
              nodes,
              prompts.size(),
              i -> router.score(IndexBenchmark.MODEL, null, prompts.get(i), fixture.pods))) {
        raw.describe(json.putObject("captured"));
        measure(json, router, prompts, keys, fixture.pods, raw);
      }
      routed(json, router, prompts, keys, fixture.pods, nodes);
      sharedLoad(json, uris, groups, prompts, fixture.pods);
    }
  }

  /** Gateways whose shares fill the shared load view in the shared-load run. */
  private static final int SHARING_GATEWAYS = 8;

  /**
   * The routed run's lookups again from a router with the shared load view, while {@value
   * #SHARING_GATEWAYS} other routers each count a request on every pod (a share per router and pod,
   * as many as a busy fleet's view holds): each lookup then also reads the model's view, pipelined
   * with it. Its rate over the routed run's is the view's cost.
   */
  private void sharedLoad(
      ObjectNode json, List<String> uris, int groups, List<int[]> prompts, List<String> pods) {
    ObjectNode shared = json.putObject("shared_load");
    List<KvRouter> peers = new ArrayList<>();
    try (KvRouter router = router(uris, groups, true, "bench-measured")) {
      for (int g = 0; g < SHARING_GATEWAYS; g++) {
        KvRouter peer = router(uris, groups, true, "bench-gateway-" + g);
        peers.add(peer);
        Scores scores = peer.score(IndexBenchmark.MODEL, null, prompts.get(g), pods);
        for (String pod : pods) {
          peer.started(scores, new Pick(pod, Pick.Reason.LEAST_LOAD, 0, false), 4096);
        }
      }
      shared.put("view_fields", SHARING_GATEWAYS); // one per router, each holding its pods
      shared.put("view_shares", SHARING_GATEWAYS * pods.size());
      ObjectNode ratios = shared.putObject("ratios");
      for (int threads : List.of(1, 8)) {
        String name = "threads_" + threads;
        log.info("router, shared load view: {} client thread(s)", threads);
        load(scoringTokens(router, prompts, pods), threads, shared.putObject(name));
        ratios.put(
            "shared_to_routed_" + name,
            ratio(
                shared.path(name),
                json.path("routed").path(name).path("lookups_per_s").asDouble()));
      }
    } finally {
      peers.forEach(KvRouter::close);
    }
  }

  /**
   * Records a route for every prompt (to the pod its pick chooses), then captures and measures the
   * lookups again: with routes recorded they must read what they read without, one HMGET of the
   * blocks hash and one of the routes per group, at the same rate.
   */
  private void routed(
      ObjectNode json,
      KvRouter router,
      List<int[]> prompts,
      List<long[]> keys,
      List<String> pods,
      List<URI> nodes) {
    int recorded = 0;
    for (int i = 0; i < prompts.size(); i++) {
      Scores scores = router.score(IndexBenchmark.MODEL, null, prompts.get(i), pods);
      Pick pick = router.pick(scores, pods, LoadSignal.none());
      if (router.recordRoute(IndexBenchmark.MODEL, pick.pod(), keys.get(i), ROUTE_TTL).join()) {
        recorded++;
      }
      router.score(IndexBenchmark.MODEL, null, prompts.get(i), pods); // warm
    }
    ObjectNode routed = json.putObject("routed");
    routed.put("routes_recorded", recorded);
    try (CapturedReads raw =
        CapturedReads.capture(
            nodes,
            prompts.size(),
            i -> router.score(IndexBenchmark.MODEL, null, prompts.get(i), pods))) {
      raw.describe(json.putObject("captured_routed"));
    }
    ObjectNode prehashed = routed.putObject("prehashed");
    ObjectNode ratios = routed.putObject("ratios");
    for (int threads : List.of(1, 8)) {
      String name = "threads_" + threads;
      log.info(
          "router, routes recorded: {} client thread(s), {} group(s)",
          threads,
          json.path("groups"));
      load(scoringTokens(router, prompts, pods), threads, routed.putObject(name));
      load(scoringKeys(router, keys, pods), threads, prehashed.putObject(name));
      ratios.put(
          "routed_to_unrouted_" + name,
          ratio(routed.path(name), json.path(name).path("lookups_per_s").asDouble()));
      ratios.put(
          "prehashed_routed_to_unrouted_" + name,
          ratio(
              prehashed.path(name),
              json.path("prehashed").path(name).path("lookups_per_s").asDouble()));
    }
  }

  /** Raw replay, router from token ids, router from block keys: at 1, then 8 client threads. */
  private void measure(
      ObjectNode json,
      KvRouter router,
      List<int[]> prompts,
      List<long[]> keys,
      List<String> pods,
      CapturedReads raw) {
    ObjectNode prehashed = json.putObject("prehashed");
    ObjectNode rawJson = json.putObject("raw");
    ObjectNode ratios = json.putObject("ratios");
    for (int threads : List.of(1, 8)) {
      String name = "threads_" + threads;
      log.info("router: {} client thread(s), {} group(s)", threads, json.path("groups"));
      load((thread, i) -> raw.replay(pick(thread, i)), threads, rawJson.putObject(name));
      load(scoringTokens(router, prompts, pods), threads, json.putObject(name));
      load(scoringKeys(router, keys, pods), threads, prehashed.putObject(name));
      double ceiling = rawJson.path(name).path("lookups_per_s").asDouble();
      ratios.put("router_to_raw_" + name, ratio(json.path(name), ceiling));
      ratios.put("prehashed_to_raw_" + name, ratio(prehashed.path(name), ceiling));
    }
    json.put(
        "hash_cores_at_router_threads_8_rate",
        hashing.cores(json.path("threads_8").path("lookups_per_s").asDouble()));
  }

  /** One scoring of a prompt's tokens per operation, the prompts taken in turn by every thread. */
  private static LoadRun.Operation scoringTokens(
      KvRouter router, List<int[]> prompts, List<String> pods) {
    return (thread, i) ->
        router
            .score(IndexBenchmark.MODEL, null, prompts.get(pick(thread, i) % prompts.size()), pods)
            .indexAvailable();
  }

  /** One scoring of a prompt's prehashed block keys per operation. */
  private static LoadRun.Operation scoringKeys(
      KvRouter router, List<long[]> keys, List<String> pods) {
    return (thread, i) ->
        router
            .score(IndexBenchmark.MODEL, keys.get(pick(thread, i) % keys.size()), pods)
            .indexAvailable();
  }

  private void load(LoadRun.Operation operation, int threads, ObjectNode json) {
    LoadRun.measure(operation, threads, warmup(), measured(), json);
  }

  private static int pick(int thread, long iteration) {
    return (int) ((iteration * 8 + thread) & Integer.MAX_VALUE);
  }

  private static double ratio(JsonNode run, double ceiling) {
    return Math.round(run.path("lookups_per_s").asDouble() / ceiling * 1000) / 1000.0;
  }

  private static KvRouter router(List<String> uris, int groups) {
    return router(uris, groups, false, "bench");
  }

  private static KvRouter router(List<String> uris, int groups, boolean sharedLoad, String id) {
    var builder =
        KvRouter.builder()
            .indexName(INDEX)
            .groups(groups)
            .model(IndexBenchmark.MODEL, ModelKeys.engine(HASH, "0", BLOCK_SIZE))
            .lookupBudget(LOOKUP_BUDGET)
            .sharedLoad(sharedLoad)
            .routerId(id);
    return (uris.size() == 1 ? builder.redisUri(uris.get(0)) : builder.clusterSeeds(uris)).build();
  }

  /** Opens the index as an ingester does (creating it), and stores {@code fixture} unless null. */
  private void fill(String uri, int groups, LookupFixture fixture) {
    try (RedisConnector connector =
            RedisConnector.builder().uri(uri).commandTimeout(Duration.ofSeconds(10)).build();
        PrefixIndex index =
            PrefixIndex.builder()
                .redis(connector)
                .indexName(INDEX)
                .groups(groups)
                .podTtl(Duration.ofHours(2))
                .build()) {
      if (fixture != null) {
        log.info("router: storing {} entries ({} groups)", fixture.entries, groups);
        ApplyPump.run(index, fixture.feeds(IndexBenchmark.MODEL, 64));
      }
    }
  }

  private static int[] randomTokens(Random random) {
    int[] tokens = new int[PROMPT_BLOCKS * BLOCK_SIZE];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(150_000);
    }
    return tokens;
  }

  private static String version(String uri) {
    io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(uri);
    try (var connection = client.connect()) {
      for (String line : connection.sync().info("server").split("\\r?\\n")) {
        if (line.startsWith("redis_version:")) {
          return line.substring("redis_version:".length()).trim();
        }
      }
      return "unknown";
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
