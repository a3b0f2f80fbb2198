package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench scale}: sweeps one axis at a time and writes {@code scale.json} and a PNG
 * chart per sweep into one directory: prompt length ({@link PromptLengthSweep}), candidate pods
 * ({@link CandidateSweep}), index size ({@link IndexSizeSweep}), index groups on a Redis Cluster
 * ({@link ClusterSweep}) and offered ingest load ({@link IngestSweep}); every curve is fitted
 * ({@link CurveFit}). Then the capacity check: what the smallest index-size point predicts for the
 * largest one this machine held, beside what that point measured.
 *
 * <p>Run: {@code scripts/kvindex bench scale [--quick] --out DIR}. Not thread-safe.
 */
final class ScaleBenchmark {
  private static final Logger log = LoggerFactory.getLogger(ScaleBenchmark.class);
  static final String RESULT = "scale.json";

  private ScaleBenchmark() {}

  static ObjectNode run(BenchOptions options, Path dir) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException(
          "bench scale starts its own Redis servers and cluster; it takes no --redis");
    }
    System.setProperty("java.awt.headless", "true");
    long start = System.nanoTime();
    ScaleSizes sizes = ScaleSizes.of(options);
    ObjectNode json = Reports.header("scale", options);
    ObjectNode setup = json.putObject("setup");
    sizes.describe(setup.putObject("sizes"));
    try (BenchRedis redis = BenchRedis.open(options)) {
      setup.put("redis_version", redis.version());
      setup.put("redis", redis.describe() + "; kvindex in database 0, the llm-d layout in 1");
      json.set("prompt_length", PromptLengthSweep.run(redis, sizes, dir));
      json.set("candidates", CandidateSweep.run(redis, sizes, dir));
      json.set("index_size", IndexSizeSweep.run(redis, sizes, dir));
    }
    log.info("scale: cluster sweep");
    json.set("cluster", ClusterSweep.run(sizes, dir));
    log.info("scale: ingest sweep");
    json.set("ingest", IngestSweep.run(sizes, dir));
    capacityCheck(json.path("index_size"), json.putObject("capacity_check"));
    Reports.finish(json, start);
    Reports.write(dir.resolve(RESULT), json);
    return json;
  }

  /**
   * The model's predictions for the largest index-size point from the smallest one's per-entry
   * costs (memory and GC time grow with entries, lookup latency and apply throughput do not),
   * beside what the largest point measured.
   */
  static void capacityCheck(JsonNode sweep, ObjectNode out) {
    JsonNode points = sweep.path("points");
    if (points.size() < 2) {
      out.put("note", "not checked: fewer than two index-size points");
      return;
    }
    JsonNode first = points.get(0);
    JsonNode last = points.get(points.size() - 1);
    double scale = last.path("entries").asDouble() / first.path("entries").asDouble();
    out.put("from_entries", first.path("entries").asLong());
    out.put("to_entries", last.path("entries").asLong());
    double base = sweep.path("used_memory_empty").asDouble();
    predicted(
        out,
        "redis_used_memory_bytes",
        base + first.path("memory_bytes_per_entry").asDouble() * last.path("entries").asDouble(),
        last.path("used_memory").asDouble());
    predicted(
        out,
        "gc_pass_s",
        first.path("gc_pass_s").asDouble() * scale,
        last.path("gc_pass_s").asDouble());
    predicted(
        out,
        "lookup_p50_us",
        first.path("lookup_p50_us").asDouble(),
        last.path("lookup_p50_us").asDouble());
    predicted(
        out,
        "apply_blocks_per_s",
        first.path("apply_blocks_per_s").asDouble(),
        last.path("apply_blocks_per_s").asDouble());
    out.put(
        "how",
        "memory = empty server + bytes per entry at the first point x entries at the last; GC pass"
            + " time grows with entries (one pass scans every field); lookup p50 and apply blocks/s"
            + " are predicted not to change with the index's size");
  }

  private static void predicted(ObjectNode out, String name, double predicted, double measured) {
    ObjectNode r = out.putObject(name);
    r.put("predicted", Math.round(predicted * 10) / 10.0);
    r.put("measured", measured);
    r.put(
        "measured_to_predicted",
        predicted == 0 ? 0 : Math.round(measured / predicted * 1000) / 1000.0);
  }
}
