package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.StreamId;
import io.kvindex.index.redis.KeySchema;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench index}: the index core against one standalone Redis on loopback, measured
 * (never asserted). Phases: memory per entry (8 pods sharing prefixes), apply throughput against
 * pipelined SADD, lookup latency against PING on an index of 1,000,000 entries, then purge and its
 * cleanup per pod size against a naive purge ({@link PurgeBenchmark}).
 *
 * <p>Run: {@code scripts/kvindex bench index [--quick] [--redis URI] --out FILE}. Not thread-safe.
 */
final class IndexBenchmark {
  static final String MODEL = "bench-model";
  private static final Logger log = LoggerFactory.getLogger(IndexBenchmark.class);
  private static final Duration POD_TTL = Duration.ofHours(2);

  private final BenchOptions options;
  private final IndexSizes sizes;
  private final BenchRedis redis;
  private final String runId;

  private IndexBenchmark(BenchOptions options, BenchRedis redis) {
    this.options = options;
    this.sizes = IndexSizes.of(options);
    this.redis = redis;
    this.runId = Long.toString(System.currentTimeMillis(), 36);
  }

  static ObjectNode run(BenchOptions options) {
    long start = System.nanoTime();
    ObjectNode json = Reports.header("index", options);
    try (BenchRedis redis = BenchRedis.open(options)) {
      IndexBenchmark bench = new IndexBenchmark(options, redis);
      ObjectNode setup = json.putObject("setup");
      bench.describe(setup);
      bench.memory(json);
      bench.applyThroughput(json);
      bench.largeEvents(json);
      new LookupBenchmark(redis, bench.sizes, bench.runId, bench::openIndex, bench::dropIndex)
          .run(json);
      new HybridLookupBenchmark(redis, bench.sizes, bench.runId, bench::openIndex, bench::dropIndex)
          .run(json);
      new PurgeBenchmark(redis, bench.sizes, bench.runId, bench::openIndex).run(json);
      bench.goals(json);
    }
    Reports.finish(json, start);
    return json;
  }

  private void describe(ObjectNode setup) {
    ObjectNode server = setup.putObject("redis");
    server.put("version", redis.version());
    server.put("where", redis.describe());
    server.put("topology", "standalone");
    setup.put("client", "one lettuce connection, one client thread, loopback");
    ObjectNode index = setup.putObject("index");
    index.put("groups", 1);
    index.put("key_mode", KeyMode.ENGINE.name());
    index.put("gc_budget_fields", PurgeBenchmark.GC_BUDGET);
    sizes.describe(setup.putObject("sizes"));
  }

  /** A fresh index under a new name; the caller closes it, then {@link #dropIndex}. */
  PrefixIndex openIndex(String name) {
    return openIndex(name, PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS);
  }

  private PrefixIndex openIndex(String name, int applyChunkBlocks) {
    return PrefixIndex.builder()
        .redis(redis.connector())
        .indexName(name)
        .podTtl(POD_TTL)
        .gcBudget(PurgeBenchmark.GC_BUDGET)
        .applyChunkBlocks(applyChunkBlocks)
        .build();
  }

  private void largeEvents(ObjectNode json) {
    String name = "bench-large-" + runId;
    log.info("apply: single events of {} blocks", LargeEventBenchmark.sizes(options.quick()));
    try {
      new LargeEventBenchmark(redis, runId, chunk -> openIndex(name, chunk), options.quick())
          .run(json);
    } finally {
      dropIndex(name);
    }
  }

  /** Removes an index's keys: FLUSHALL on a server we started, its own keys on a user's. */
  void dropIndex(String name) {
    if (redis.owned()) {
      redis.flushIfOwned();
    } else {
      redis.deleteKeys(KeySchema.keyPrefix(name));
    }
  }

  private void memory(ObjectNode json) {
    String name = "bench-memory-" + runId;
    redis.flushIfOwned();
    MemoryFixture fixture = MemoryFixture.generate(11, sizes.promptBlocks(), sizes.memoryEntries());
    log.info("memory: storing {} (block, pod) entries over 8 pods", fixture.entries);
    try (PrefixIndex index = openIndex(name)) {
      long before = redis.usedMemory();
      ApplyPump.run(index, fixture.feeds(MODEL, sizes.fillBatchBlocks()));
      long after = redis.usedMemory();
      double perEntry = (after - before) / (double) fixture.entries;
      json.put("memory_bytes_per_entry", LatencyRecorder.roundTenth(perEntry));
      ObjectNode detail = json.putObject("memory");
      fixture.describe(detail);
      detail.put("used_memory_before", before);
      detail.put("used_memory_after", after);
      detail.put(
          "bytes_per_distinct_block",
          LatencyRecorder.roundTenth((after - before) / (double) fixture.distinctBlocks));
      if (!redis.owned()) {
        detail.put("note", "user server: other clients' writes during the run count here too");
      }
    } finally {
      dropIndex(name);
    }
  }

  private void applyThroughput(ObjectNode json) {
    String name = "bench-apply-" + runId;
    Random random = new Random(23);
    int streams = sizes.pods();
    int perStream = sizes.applyBlocks() / streams;
    List<ApplyPump.Feed> feeds = new ArrayList<>();
    for (String pod : LookupFixture.podNames("apply-pod-", streams)) {
      List<ChainFeed.Span> spans =
          List.of(ChainFeed.Span.prefix(LookupFixture.randomChain(random, perStream), perStream));
      feeds.add(
          new ApplyPump.Feed(
              StreamId.of(MODEL, pod), new ChainFeed(spans, sizes.applyBatchBlocks())));
    }
    log.info("apply: {} blocks over {} streams", perStream * streams, streams);
    long blocks;
    long nanos;
    try (PrefixIndex index = openIndex(name)) {
      long start = System.nanoTime();
      blocks = ApplyPump.run(index, feeds);
      nanos = System.nanoTime() - start;
    } finally {
      dropIndex(name);
    }
    String saddPrefix = "kvindex-bench:" + runId + ":sadd:";
    double sadd;
    try (StatefulRedisConnection<byte[], byte[]> connection = redis.binaryConnection()) {
      sadd = Baselines.saddPipelinedPerSecond(connection, saddPrefix, (int) blocks);
    } finally {
      redis.deleteKeys(saddPrefix);
    }
    double apply = Reports.perSecond(blocks, nanos);
    json.put("apply_blocks_per_s", apply);
    json.put("sadd_pipelined_per_s", Math.round(sadd));
    json.put("apply_to_sadd_ratio", Math.round(apply / sadd * 1000) / 1000.0);
    ObjectNode detail = json.putObject("apply");
    detail.put("blocks", blocks);
    detail.put("streams", streams);
    detail.put("blocks_per_batch", sizes.applyBatchBlocks());
    detail.put(
        "how",
        "one client thread, one connection; each stream in sequence order with one batch (one"
            + " BlockStored) in flight, all streams at once, as an ingester pipelines them");
    detail.put(
        "sadd_how",
        "single-member SADD of a pod number (8 pods per block key) per command, 1000 per"
            + " pipeline flush, same connection count and server");
  }

  private void goals(ObjectNode json) {
    ObjectNode goals = json.putObject("goals");
    double ping = json.path("ping_p50_us").asDouble();
    goals.put("lookup_p50_le_2.5x_ping_p50", json.path("lookup_p50_us").asDouble() <= 2.5 * ping);
    goals.put("lookup_p99_le_1000_us", json.path("lookup_p99_us").asDouble() <= 1000);
    boolean purge = true;
    for (JsonNode size : json.path("purge_max_command_us")) {
      purge &= size.asDouble() <= 1000;
    }
    goals.put("purge_max_command_le_1000_us", purge);
    boolean apply = true;
    for (JsonNode size : json.path("apply_max_command_us")) {
      apply &= size.asDouble() <= 1000;
    }
    goals.put("apply_max_command_le_1000_us", apply);
    goals.put("memory_bytes_per_entry_le_64", json.path("memory_bytes_per_entry").asDouble() <= 64);
    goals.put(
        "hybrid_lookup_p50_le_1.3x_single_group",
        json.path("hybrid_lookup").path("hybrid_to_single_group_p50_ratio").asDouble() <= 1.3);
    goals.put("note", "measured on this run; " + (options.quick() ? "quick sizes" : "full sizes"));
  }
}
