package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
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
 * against a standalone server and a 3-primary cluster (local redis-server processes on loopback).
 * The index is filled through {@link PrefixIndex#apply} with the {@link LookupFixture}
 * distribution, keyed by the router's own block keys.
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

  private final BenchOptions options;

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
      bench.topology(
          json.putObject("standalone"), List.of(redis.uri().toString()), STANDALONE_GROUPS);
    }
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder().primaries(3).replicasPerPrimary(0).start()) {
      List<String> seeds = cluster.seedUris().stream().map(URI::toString).toList();
      bench.topology(json.putObject("cluster"), seeds, CLUSTER_GROUPS);
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
    setup.put("lookup_path", "KvRouter.score(model, lora, tokenIds, pods)");
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
    setup.put("warmup_s", warmup().toSeconds());
    setup.put("measured_s", measured().toSeconds());
  }

  private void topology(ObjectNode json, List<String> uris, int groups) {
    String joined = String.join(",", uris);
    try (KvRouter router = router(uris, groups)) {
      List<int[]> prompts = new ArrayList<>();
      LookupFixture fixture =
          LookupFixture.generate(
              7,
              PODS,
              entries(),
              random -> {
                int[] tokens = randomTokens(random);
                prompts.add(tokens);
                return router.blockKeys(IndexBenchmark.MODEL, null, null, tokens);
              });
      fill(joined, groups, fixture);
      json.put("entries", fixture.entries);
      json.put("prompts", prompts.size());
      json.put("groups", groups);
      for (int threads : List.of(1, 8)) {
        log.info("router: {} client thread(s), {} group(s)", threads, groups);
        LoadRun.measure(
            (thread, i) -> score(router, prompts, fixture.pods, thread, i),
            threads,
            warmup(),
            measured(),
            json.putObject("threads_" + threads));
      }
    }
  }

  private static boolean score(
      KvRouter router, List<int[]> prompts, List<String> pods, int thread, long iteration) {
    int[] prompt = prompts.get((int) ((iteration * 8 + thread) % prompts.size()));
    return router.score(IndexBenchmark.MODEL, null, prompt, pods).indexAvailable();
  }

  private static KvRouter router(List<String> uris, int groups) {
    var builder =
        KvRouter.builder()
            .indexName(INDEX)
            .groups(groups)
            .model(IndexBenchmark.MODEL, ModelKeys.engine(HASH, "0", BLOCK_SIZE))
            .lookupBudget(LOOKUP_BUDGET);
    return (uris.size() == 1 ? builder.redisUri(uris.get(0)) : builder.clusterSeeds(uris)).build();
  }

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
      log.info("router: storing {} entries ({} groups)", fixture.entries, groups);
      ApplyPump.run(index, fixture.feeds(IndexBenchmark.MODEL, 64));
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
