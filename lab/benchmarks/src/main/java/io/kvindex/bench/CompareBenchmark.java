package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench compare}: three indexes behind the same driver ({@link ComparedIndex}),
 * measured in the same run on the same workload and the same local standalone Redis: kvindex as
 * shipped (database 0), the llm-d layout ({@link LlmdLayout}, database 1) and an index in this JVM
 * ({@link InProcessIndex}, the floor a shared index pays its round trip against). Phases: store the
 * workload into each (apply blocks/s, memory per entry), lookups ({@link CompareLookups}), clears
 * ({@link CompareClears}); then kvindex / llm-d layout ratios for every figure a shared index can
 * win.
 *
 * <p>Run: {@code scripts/kvindex bench compare [--quick] --out FILE}. Not thread-safe.
 */
final class CompareBenchmark {
  private static final Logger log = LoggerFactory.getLogger(CompareBenchmark.class);
  private static final String INDEX = "bench-compare";
  private static final int LLMD_DATABASE = 1;

  private final CompareSizes sizes;
  private final BenchRedis redis;

  private CompareBenchmark(CompareSizes sizes, BenchRedis redis) {
    this.sizes = sizes;
    this.redis = redis;
  }

  static ObjectNode run(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException(
          "bench compare starts its own Redis (it flushes databases 0 and 1); it takes no --redis");
    }
    long start = System.nanoTime();
    ObjectNode json = Reports.header("compare", options);
    CompareSizes sizes = CompareSizes.of(options);
    try (BenchRedis redis = BenchRedis.open(options)) {
      new CompareBenchmark(sizes, redis).measure(json);
    }
    Reports.finish(json, start);
    return json;
  }

  private void measure(ObjectNode json) {
    ObjectNode setup = json.putObject("setup");
    ObjectNode figures = json.putObject("figures");
    ObjectNode details = json.putObject("details");
    LookupFixture fixture =
        LookupFixture.generate(7, sizes.pods(), sizes.promptBlocks(), sizes.entries());
    describe(setup, fixture);
    List<ComparedIndex> indexes = new ArrayList<>();
    try {
      indexes.add(
          new KvindexContender(
              redis.connector(), INDEX, IndexBenchmark.MODEL, 1, ApplyPump.Calls.COALESCED));
      indexes.add(new LlmdLayout(redis.uri(), LLMD_DATABASE));
      indexes.add(new InProcessIndex((int) (sizes.entries() / 8)));
      ObjectNode indexSetup = setup.putObject("indexes");
      for (ComparedIndex index : indexes) {
        indexSetup.put(index.name(), index.describe());
        fill(
            index,
            fixture,
            Reports.child(figures, index.name()),
            Reports.child(details, index.name()));
      }
      new CompareLookups(redis, fixture, sizes).run(indexes, figures, details);
      KvindexContender kvindex = (KvindexContender) indexes.get(0);
      Reports.child(details, "kvindex").put("incomplete_lookups", kvindex.incompleteLookups());
      new CompareClears(redis)
          .run(indexes, sizes.clearSizes(), figures, Reports.child(details, "clears"));
      applyOneCallPerBatch(fixture, Reports.child(details, "kvindex"));
      ratios(figures, json.putObject("ratios_kvindex_to_llmd_layout"));
    } finally {
      indexes.forEach(ComparedIndex::close);
      redis.flushIfOwned();
    }
  }

  private void describe(ObjectNode setup, LookupFixture fixture) {
    ObjectNode server = setup.putObject("redis");
    server.put("version", redis.version());
    server.put("where", redis.describe());
    server.put("topology", "standalone; kvindex in database 0, the llm-d layout in database 1");
    ObjectNode workload = setup.putObject("workload");
    sizes.describe(workload);
    fixture.describe(workload);
    workload.put(
        "store",
        "every pod's prefixes stored as BlockStored batches of "
            + sizes.batchBlocks()
            + " blocks (parent-linked, GPU tier), 64 streams at once from one client");
    setup.put(
        "figures_note",
        "figures.<index> are the headline numbers; ratios are kvindex / llm-d layout, with"
            + " kvindex_ahead saying whether kvindex is better on that figure (lower latency, CPU,"
            + " memory and command time; higher throughput; atomic clears). The in-process index is"
            + " context, not a contender: it pays no network round trip and is not shared.");
  }

  /** Stores the workload into one index: apply blocks/s and memory per (block, pod) entry. */
  private void fill(ComparedIndex index, LookupFixture fixture, ObjectNode fig, ObjectNode out) {
    log.info("compare: storing {} entries into {}", fixture.entries, index.name());
    boolean onRedis = !(index instanceof InProcessIndex);
    long before = onRedis ? redis.usedMemory() : heapUsed();
    long start = System.nanoTime();
    long blocks = index.store(fixture.feeds(IndexBenchmark.MODEL, sizes.batchBlocks()));
    long nanos = System.nanoTime() - start;
    long after = onRedis ? redis.usedMemory() : heapUsed();
    if (blocks != fixture.entries) {
      throw new IllegalStateException(
          index.name() + " stored " + blocks + " blocks of " + fixture.entries);
    }
    fig.put("apply_blocks_per_s", Reports.perSecond(blocks, nanos));
    out.put("blocks_stored", blocks);
    out.put("store_s", LatencyRecorder.roundTenth(nanos / 1e9));
    if (onRedis) {
      fig.put("memory_bytes_per_entry", perEntry(after - before, blocks));
      out.put("used_memory_before", before);
      out.put("used_memory_after", after);
      out.put(
          "memory_how", "INFO used_memory after minus before the store, over (block, pod) entries");
      return;
    }
    long accounted = ((InProcessIndex) index).accountedBytes();
    fig.put("memory_bytes_per_entry", perEntry(accounted, blocks));
    out.put("table_bytes", accounted);
    out.put("heap_growth_bytes_per_entry", perEntry(after - before, blocks));
    out.put(
        "memory_how",
        "the table's arrays (keys, references, one short[] of pods per block) in the JVM's array"
            + " layout with compressed references, over entries; heap_growth_bytes_per_entry is the"
            + " heap in use after minus before (each after System.gc()), which other garbage blurs");
  }

  /**
   * kvindex's apply blocks/s with one call per batch (no batches coalesced: a stream that keeps up
   * with its engine), into an index of its own, over the first quarter of the workload's prompts.
   */
  private void applyOneCallPerBatch(LookupFixture fixture, ObjectNode out) {
    int prompts = Math.max(1, fixture.prompts.size() / 4);
    try (KvindexContender index =
        new KvindexContender(
            redis.connector(),
            INDEX + "-per-batch",
            IndexBenchmark.MODEL,
            1,
            ApplyPump.Calls.ONE_PER_BATCH)) {
      long start = System.nanoTime();
      long blocks =
          index.store(fixture.feeds(IndexBenchmark.MODEL, sizes.batchBlocks(), 0, prompts));
      long nanos = System.nanoTime() - start;
      out.put("apply_blocks_per_s_one_call_per_batch", Reports.perSecond(blocks, nanos));
      out.put(
          "apply_one_call_per_batch_how",
          "the first "
              + prompts
              + " prompts' "
              + blocks
              + " entries stored into another kvindex index with one apply call per "
              + sizes.batchBlocks()
              + "-block batch; figures.kvindex.apply_blocks_per_s coalesces a stream's"
              + " consecutive batches into one call while they fit one chunk, as the ingester"
              + " applies a stream behind its engine (every stream is, at saturation)");
    }
  }

  private static double perEntry(long bytes, long entries) {
    return LatencyRecorder.roundTenth(bytes / (double) entries);
  }

  /** The heap in use after a full collection, in bytes. */
  static long heapUsed() {
    Runtime runtime = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return runtime.totalMemory() - runtime.freeMemory();
  }

  /** kvindex / llm-d layout for every figure both have; which way is better; who is ahead. */
  static void ratios(ObjectNode figures, ObjectNode out) {
    JsonNode kvindex = figures.path("kvindex");
    JsonNode llmd = figures.path("llmd_layout");
    for (Iterator<Map.Entry<String, JsonNode>> it = kvindex.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> field = it.next();
      String name = field.getKey();
      if (name.equals("clear_ms") || name.startsWith("client_cpu")) {
        continue;
      }
      if (field.getValue().isObject()) {
        field
            .getValue()
            .fields()
            .forEachRemaining(
                size ->
                    ratio(
                        out,
                        name + "_" + size.getKey(),
                        size.getValue(),
                        llmd.path(name).path(size.getKey()),
                        higherIsBetter(name)));
      } else {
        ratio(out, name, field.getValue(), llmd.path(name), higherIsBetter(name));
      }
    }
  }

  private static boolean higherIsBetter(String figure) {
    return figure.startsWith("lookups_per_s") || figure.startsWith("apply_blocks_per_s");
  }

  private static void ratio(
      ObjectNode out, String name, JsonNode kvindex, JsonNode llmd, boolean higherIsBetter) {
    if (llmd.isMissingNode()) {
      return;
    }
    ObjectNode r = out.putObject(name);
    if (kvindex.isBoolean()) {
      r.put("kvindex", kvindex.asBoolean());
      r.put("llmd_layout", llmd.asBoolean());
      r.put("better", "true (atomic)");
      r.put("kvindex_ahead", kvindex.asBoolean() && !llmd.asBoolean());
      return;
    }
    double k = kvindex.asDouble();
    double l = llmd.asDouble();
    r.put("kvindex", k);
    r.put("llmd_layout", l);
    r.put("ratio", l == 0 ? Double.NaN : Math.round(k / l * 1000) / 1000.0);
    r.put("better", higherIsBetter ? "higher" : "lower");
    r.put("kvindex_ahead", higherIsBetter ? k > l : k < l);
  }
}
