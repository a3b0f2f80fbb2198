package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedFleet;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench ingest}: one ingester replica applying the KV events of 64 simulated vLLM
 * pods (real ZMQ PUB sockets, the real wire format) to a local standalone Redis. Two phases: an
 * offered load (a fixed request rate, each request a fresh prompt whose blocks every pod publishes
 * as BlockStored) for the lag from event timestamp to applied, then a saturation run (requests as
 * fast as one driver thread can submit them) for the sustained blocks per second. Everything shares
 * one machine: the figures are for the whole pipeline on it.
 *
 * <p>Run: {@code scripts/kvindex bench ingest [--quick] --out FILE}. Not thread-safe.
 */
final class IngestBenchmark {
  private static final Logger log = LoggerFactory.getLogger(IngestBenchmark.class);
  private static final int PODS = 64;
  private static final int PROMPT_TOKENS = 1024;
  private static final int OUTPUT_TOKENS = 16;
  private static final String INDEX = "bench-ingest";
  private static final Duration STALL = Duration.ofSeconds(15);

  /** Blocks a request stores: its prompt's full blocks (a fresh prompt: none cached). */
  private static final int BLOCKS_PER_REQUEST = PROMPT_TOKENS / 16;

  private final BenchOptions options;
  private final Random random = new Random(5);

  private IngestBenchmark(BenchOptions options) {
    this.options = options;
  }

  static ObjectNode run(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException(
          "bench ingest starts its own Redis, pods and ingester; it takes no --redis");
    }
    long start = System.nanoTime();
    ObjectNode json = Reports.header("ingest", options);
    new IngestBenchmark(options).measure(json);
    Reports.finish(json, start);
    return json;
  }

  private double offeredRequestsPerSecond() {
    return options.quick() ? 50 : 100;
  }

  private Duration offeredDuration() {
    return options.quick() ? Duration.ofSeconds(5) : Duration.ofSeconds(30);
  }

  private Duration saturationDuration() {
    return options.quick() ? Duration.ofSeconds(5) : Duration.ofSeconds(20);
  }

  private void measure(ObjectNode json) {
    ObjectNode setup = json.putObject("setup");
    setup.put("pods", PODS);
    setup.put("ingester_replicas", 1);
    setup.put("redis", "one local standalone redis-server on loopback");
    setup.put(
        "pod",
        "simulated vLLM pod (simulator module): block size 16, 32768 GPU blocks, engine keys,"
            + " map-era wire format, one data-parallel rank, ZMQ PUB + replay ROUTER on loopback");
    setup.put(
        "request",
        "a fresh random prompt of "
            + PROMPT_TOKENS
            + " tokens ("
            + PROMPT_TOKENS / 16
            + " blocks) + "
            + OUTPUT_TOKENS
            + " output tokens, on pods in turn: every prompt block is a new BlockStored block");
    setup.put("machine_note", "pods, ingester, Redis and the load driver share the machine");
    try (LocalRedis redis = LocalRedis.start();
        SimulatedFleet fleet =
            SimulatedFleet.builder()
                .pods(PODS)
                .podTemplate(PodConfig.builder().http(false).build())
                .build();
        Ingester ingester = Ingester.start(config(redis, fleet))) {
      MeterRegistry registry = ingester.meterRegistry();
      awaitLeases(registry, Duration.ofSeconds(60));
      offered(fleet, registry, json.putObject("offered_load"));
      saturation(fleet, registry, json.putObject("saturation"));
      counters(registry, json.putObject("ingester_counters"));
    }
    ObjectNode offered = (ObjectNode) json.get("offered_load");
    ObjectNode saturation = (ObjectNode) json.get("saturation");
    json.put("blocks_per_s", saturation.path("blocks_per_s").asDouble());
    json.put("lag_p50_ms", offered.path("lag_p50_ms").asDouble());
    json.put("lag_p99_ms", offered.path("lag_p99_ms").asDouble());
    json.put("offered_blocks_per_s", offered.path("offered_blocks_per_s").asDouble());
  }

  private static IngesterConfig config(LocalRedis redis, SimulatedFleet fleet) {
    List<PodSpec> specs = new ArrayList<>();
    for (SimulatedPod pod : fleet.pods()) {
      StreamEndpoints endpoints = pod.endpoints().get(0);
      specs.add(PodSpec.of(pod.name(), pod.model(), endpoints.publish(), endpoints.replay()));
    }
    return IngesterConfig.builder()
        .redisUri(redis.uri().toString())
        .indexName(INDEX)
        .replicaId("bench-ingester-1")
        .httpPort(-1)
        .pods(specs)
        .build();
  }

  private void offered(SimulatedFleet fleet, MeterRegistry registry, ObjectNode json) {
    double rate = offeredRequestsPerSecond();
    log.info("ingest: offered load {} requests/s for {}", rate, offeredDuration());
    // Warm-up: a few seconds at the same rate, not recorded.
    double warmStart = storedBlocks(registry);
    long warmRequests = drive(fleet, rate, Duration.ofSeconds(options.quick() ? 2 : 5));
    awaitApplied(registry, warmStart + warmRequests * BLOCKS_PER_REQUEST);
    LagHistogram before = LagHistogram.of(lag(registry));
    double blocksBefore = storedBlocks(registry);
    long start = System.nanoTime();
    long requests = drive(fleet, rate, offeredDuration());
    long driveNanos = System.nanoTime() - start;
    awaitApplied(registry, blocksBefore + requests * BLOCKS_PER_REQUEST);
    double blocks = storedBlocks(registry) - blocksBefore;
    LagHistogram lag = LagHistogram.of(lag(registry)).minus(before);
    json.put("requests_per_s", rate);
    json.put("requests", requests);
    json.put("blocks_published", requests * BLOCKS_PER_REQUEST);
    json.put("offered_blocks_per_s", Math.round(blocks / (driveNanos / 1e9)));
    json.put("blocks_applied", Math.round(blocks));
    json.put("lag_p50_ms", lag.percentileMillis(0.50));
    json.put("lag_p90_ms", lag.percentileMillis(0.90));
    json.put("lag_p99_ms", lag.percentileMillis(0.99));
    json.put("lag_max_ms_since_start", lag.maxMillis());
    json.put("lag_batches", lag.count());
    json.put(
        "lag_how",
        "kvindex.ingester.lag (event batch timestamp to applied in Redis): the Micrometer"
            + " percentile histogram's buckets over the measured window (after a warm-up at the"
            + " same rate); a percentile is its"
            + " bucket's upper bound (buckets grow by about a third)");
  }

  private void saturation(SimulatedFleet fleet, MeterRegistry registry, ObjectNode json) {
    log.info("ingest: saturation for {}", saturationDuration());
    double blocksBefore = storedBlocks(registry);
    long start = System.nanoTime();
    long requests = drive(fleet, Double.POSITIVE_INFINITY, saturationDuration());
    long driveNanos = System.nanoTime() - start;
    long published = requests * BLOCKS_PER_REQUEST;
    long caughtUp = awaitApplied(registry, blocksBefore + published);
    double blocks = storedBlocks(registry) - blocksBefore;
    long nanos = caughtUp - start;
    json.put("requests", requests);
    json.put("blocks_published", published);
    json.put("published_blocks_per_s", Math.round(published / (driveNanos / 1e9)));
    json.put("blocks_applied", Math.round(blocks));
    json.put("blocks_not_applied", Math.round(published - blocks));
    json.put("blocks_per_s", Math.round(blocks / (nanos / 1e9)));
    json.put("drive_s", LatencyRecorder.roundTenth(driveNanos / 1e9));
    json.put("until_applied_s", LatencyRecorder.roundTenth(nanos / 1e9));
    json.put(
        "how",
        "one driver thread submits requests back to back; blocks_per_s = blocks applied from"
            + " the first request until the last one was applied (or the count stalled for "
            + STALL.toSeconds()
            + " s: then blocks_not_applied > 0, for example blocks of a gap the replay ring no"
            + " longer held)");
  }

  /** Submits requests to pods in turn at {@code rate} per second (or flat out); returns them. */
  private long drive(SimulatedFleet fleet, double rate, Duration duration) {
    List<SimulatedPod> pods = fleet.pods();
    long start = System.nanoTime();
    long end = start + duration.toNanos();
    long count = 0;
    while (System.nanoTime() < end) {
      if (Double.isFinite(rate)) {
        long due = start + (long) (count * 1e9 / rate);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
          continue;
        }
      }
      pods.get((int) (count % pods.size())).submit(request());
      count++;
    }
    return count;
  }

  private InferenceRequest request() {
    int[] prompt = new int[PROMPT_TOKENS];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = random.nextInt(150_000);
    }
    int[] output = new int[OUTPUT_TOKENS];
    for (int i = 0; i < output.length; i++) {
      output[i] = random.nextInt(150_000);
    }
    return InferenceRequest.of(prompt, output);
  }

  /** Every ingester counter at the end of the run (gaps, replays, batch outcomes, ...). */
  private static void counters(MeterRegistry registry, ObjectNode json) {
    for (Meter meter : registry.getMeters()) {
      if (meter instanceof Counter counter
          && meter.getId().getName().startsWith("kvindex.ingester.")) {
        StringBuilder name = new StringBuilder(meter.getId().getName());
        meter
            .getId()
            .getTags()
            .forEach(t -> name.append(',').append(t.getKey()).append('=').append(t.getValue()));
        json.put(name.toString(), Math.round(counter.count()));
      }
    }
  }

  /**
   * Waits until the ingester has applied {@code target} stored blocks, or its count has not moved
   * for {@link #STALL} (longer than a lease TTL, so a stream that lost its lease and waits to take
   * it back is waited for); returns when the count last moved.
   */
  static long awaitApplied(MeterRegistry registry, double target) {
    long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
    double last = storedBlocks(registry);
    long lastChange = System.nanoTime();
    while (last < target && System.nanoTime() - lastChange < STALL.toNanos()) {
      if (System.nanoTime() > deadline) {
        break;
      }
      LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
      double now = storedBlocks(registry);
      if (now != last) {
        last = now;
        lastChange = System.nanoTime();
      }
    }
    return lastChange;
  }

  static void awaitLeases(MeterRegistry registry, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (leases(registry) < PODS) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "the ingester held " + leases(registry) + " of " + PODS + " leases after " + timeout);
      }
      LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
    }
  }

  private static double leases(MeterRegistry registry) {
    var gauge = registry.find("kvindex.ingester.leases.held").gauge();
    return gauge == null ? 0 : gauge.value();
  }

  static double storedBlocks(MeterRegistry registry) {
    return registry.find("kvindex.ingester.blocks").tag("type", "stored").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  static Timer lag(MeterRegistry registry) {
    Timer timer = registry.find("kvindex.ingester.lag").timer();
    if (timer == null) {
      throw new IllegalStateException("the ingester has no kvindex.ingester.lag timer");
    }
    return timer;
  }
}
