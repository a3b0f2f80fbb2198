package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;

/**
 * The end-to-end benchmarks, each measured (never asserted) against real redis-server processes and
 * returning one JSON object with its figures and the setup they were measured in. Run them through
 * {@code scripts/kvindex bench index|router|ingest|compare [--quick] --out FILE} and {@code
 * scripts/kvindex bench scale [--quick] --out DIR}.
 *
 * <p>Thread-safe: each call owns everything it starts, and ends it before returning.
 */
public final class Benchmarks {
  private Benchmarks() {}

  /**
   * The index core on standalone Redis: lookup latency against PING, purge and cleanup command
   * times against a naive purge, memory per entry, apply throughput against pipelined SADD.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis that is not one standalone
   *     server
   */
  public static JsonNode index(BenchOptions options) {
    return IndexBenchmark.run(options);
  }

  /**
   * Lookup throughput and latency with 1 and 8 client threads, on a standalone server and on a
   * 3-primary cluster, both started here.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis (this benchmark starts its
   *     own)
   */
  public static JsonNode router(BenchOptions options) {
    return RouterBenchmark.run(options);
  }

  /**
   * Ingester replicas applying the events of 64 pods replayed by a light publisher: sustained
   * blocks per second (one replica, two) against one client's apply to the same Redis, and the lag
   * from event timestamp to applied at a stated offered load.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis (this benchmark starts its
   *     own)
   */
  public static JsonNode ingest(BenchOptions options) {
    return IngestBenchmark.run(options);
  }

  /**
   * kvindex, the llm-d layout and an in-process index behind one driver, on one workload and one
   * local standalone Redis: lookup latency and throughput at 1 and 8 client threads, Redis CPU per
   * lookup, memory per entry, apply blocks/s, the longest Redis command of a pod's clear and
   * whether a concurrent lookup saw part of it; with kvindex / llm-d layout ratios.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis (this benchmark starts its
   *     own)
   */
  public static JsonNode compare(BenchOptions options) {
    return CompareBenchmark.run(options);
  }

  /**
   * Sweeps one axis at a time (prompt length, candidates, index size, index groups on a cluster,
   * offered ingest load) and writes {@code scale.json} with a PNG chart per sweep into {@code dir};
   * returns the JSON.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis (this benchmark starts its
   *     own)
   */
  public static JsonNode scale(BenchOptions options, Path dir) {
    return ScaleBenchmark.run(options, dir);
  }

  /**
   * The endpoint picker's added latency (request headers in to the pick out, 4 096-token token-id
   * prompts, 16 candidates, full-duplex streamed) against the library's score and pick of the same
   * prompts, on a local Redis started here.
   *
   * @throws IllegalArgumentException if {@code options} name a Redis (this benchmark starts its
   *     own)
   */
  public static JsonNode epp(BenchOptions options) {
    return EppBenchmark.run(options);
  }

  /** Writes a result as indented JSON, creating the parent directories. */
  public static void write(Path file, JsonNode result) {
    Reports.write(file, result);
  }
}
