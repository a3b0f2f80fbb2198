package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.PrefixIndex;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.redis.RedisConnector;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench router}: lookup throughput and latency as a gateway sees them, with 1 and 8
 * client threads sharing one client, against a standalone server and a 3-primary cluster (local
 * redis-server processes on loopback). The index is filled through {@link PrefixIndex#apply} with
 * the {@link LookupFixture} distribution; lookups go through {@link Lookups}.
 *
 * <p>Run: {@code scripts/kvindex bench router [--quick] --out FILE}. Not thread-safe.
 */
final class RouterBenchmark {
  static final String INDEX = "bench-router";
  private static final Logger log = LoggerFactory.getLogger(RouterBenchmark.class);
  private static final int STANDALONE_GROUPS = 1;
  private static final int CLUSTER_GROUPS = 8;

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
    ObjectNode setup = json.putObject("setup");
    bench.describe(setup);
    try (LocalRedis redis = LocalRedis.start()) {
      bench.topology(json.putObject("standalone"), redis.uri().toString(), STANDALONE_GROUPS);
    }
    try (LocalRedisCluster cluster =
        LocalRedisCluster.builder().primaries(3).replicasPerPrimary(0).start()) {
      String seeds =
          cluster.seedUris().stream().map(URI::toString).collect(Collectors.joining(","));
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
    setup.put("prompt_blocks", 256);
    setup.put("pods", 64);
    setup.put("candidates", 64);
    setup.put("min_entries", entries());
    setup.put("lookup_path", Lookups.PATH);
    setup.put(
        "depth_distribution",
        "per prompt: 8 random pods hold all 256 blocks, 24 a uniformly random prefix, 32 none");
    setup.put(
        "standalone", "one local redis-server on loopback, index groups " + STANDALONE_GROUPS);
    setup.put(
        "cluster",
        "local Redis Cluster, 3 primaries, no replicas, on loopback; index groups "
            + CLUSTER_GROUPS
            + " (one script per group per lookup, all in flight at once)");
    setup.put("clients", "one shared client (one connection) used by all client threads");
    setup.put("warmup_s", warmup().toSeconds());
    setup.put("measured_s", measured().toSeconds());
    setup.put("redis_version", "7.0.15 unless a redis-server on the PATH says otherwise");
  }

  private void topology(ObjectNode json, String uri, int groups) {
    LookupFixture fixture = LookupFixture.generate(7, 64, 256, entries());
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
      json.put("entries", fixture.entries);
      json.put("groups", groups);
      try (Lookups lookups = Lookups.open(uri, groups, index, fixture)) {
        for (int threads : List.of(1, 8)) {
          log.info("router: {} client thread(s)", threads);
          LoadRun.measure(
              lookups::score, threads, warmup(), measured(), json.putObject("threads_" + threads));
        }
      }
    }
  }

  /** The prompts as index lookup requests over all pods. */
  static List<LookupRequest> requests(LookupFixture fixture) {
    List<LookupRequest> requests = new ArrayList<>();
    for (long[] prompt : fixture.prompts) {
      List<Long> keys = new ArrayList<>(prompt.length);
      for (long key : prompt) {
        keys.add(key);
      }
      requests.add(LookupRequest.of(IndexBenchmark.MODEL, KeyMode.ENGINE, keys, fixture.pods));
    }
    return requests;
  }
}
