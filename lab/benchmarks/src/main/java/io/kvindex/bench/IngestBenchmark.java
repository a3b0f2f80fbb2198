package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.redis.RedisConnector;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code kvindex bench ingest}: ingester replicas applying the KV events of 64 pods to a local
 * standalone Redis, measured against what one client applies to the same Redis in the same run. The
 * pods are a {@link LightPublisher} replaying pre-encoded map-era batches ({@link IngestPayloads}:
 * a fresh 64-block chain with its token ids each, stamped when sent), so that publishing takes
 * little of the CPU the ingester needs. Four phases:
 *
 * <ol>
 *   <li>the ceiling: one client applies the same kind of batches to 64 streams of its own index
 *       ({@link ApplyPump}: each stream in order with one batch in flight, all at once);
 *   <li>an offered load (100 batches/s = 6 400 blocks/s) for the lag from event timestamp to
 *       applied;
 *   <li>saturation: every pod's batches sent at once, one ingester replica, blocks/s from the first
 *       send until the last block is applied;
 *   <li>the same with two replicas sharing the streams.
 * </ol>
 *
 * <p>Run: {@code scripts/kvindex bench ingest [--quick] --out FILE}. Not thread-safe.
 */
final class IngestBenchmark {
  private static final Logger log = LoggerFactory.getLogger(IngestBenchmark.class);
  private static final int PODS = 64;
  private static final int BLOCKS = IngestPayloads.BLOCKS_PER_BATCH;
  private static final String INDEX = "bench-ingest";
  private static final String CEILING_INDEX = "bench-ingest-ceiling";
  private static final Duration STALL = Duration.ofSeconds(15);
  private static final double OFFERED_BATCHES_PER_S = 100;

  private final BenchOptions options;
  private final IngestPayloads payloads = new IngestPayloads(5);
  private RedisCommands<String, String> admin;

  private IngestBenchmark(BenchOptions options) {
    this.options = options;
  }

  static ObjectNode run(BenchOptions options) {
    if (options.redisUri().isPresent()) {
      throw new IllegalArgumentException(
          "bench ingest starts its own Redis, publisher and ingesters; it takes no --redis");
    }
    long start = System.nanoTime();
    ObjectNode json = Reports.header("ingest", options);
    new IngestBenchmark(options).measure(json);
    Reports.finish(json, start);
    return json;
  }

  private Duration offeredDuration() {
    return options.quick() ? Duration.ofSeconds(4) : Duration.ofSeconds(30);
  }

  /** Batches each pod publishes in a saturation run. */
  private int saturationBatchesPerPod() {
    return options.quick() ? 30 : 400;
  }

  private void measure(ObjectNode json) {
    ObjectNode setup = json.putObject("setup");
    setup.put("pods", PODS);
    setup.put("redis", "one local standalone redis-server on loopback");
    setup.put(
        "publisher",
        "one thread replaying pre-encoded map-era batches over 64 ZMQ PUB sockets on loopback,"
            + " no replay socket; each batch one BlockStored of a fresh "
            + BLOCKS
            + "-block chain with its token ids (block size 16), engine keys");
    setup.put(
        "machine_note",
        "publisher, ingesters, Redis and the ceiling's client share the machine's cores");
    try (LocalRedis redis = LocalRedis.start();
        LightPublisher publisher = new LightPublisher(PODS)) {
      RedisClient client = RedisClient.create(redis.uri().toString());
      try (StatefulRedisConnection<String, String> connection = client.connect()) {
        admin = connection.sync();
        phases(redis, publisher, json);
      } finally {
        client.shutdown();
      }
    }
    summary(json);
  }

  private void phases(LocalRedis redis, LightPublisher publisher, ObjectNode json) {
    ceiling(redis, json.putObject("ceiling"));
    try (Ingester first = Ingester.start(config(redis, publisher, INDEX, "bench-ingester-1"))) {
      MeterRegistry registry = first.meterRegistry();
      awaitLeases(List.of(registry), Duration.ofSeconds(60));
      offered(publisher, registry, json.putObject("offered_load"));
      saturation(publisher, List.of(registry), json.putObject("saturation"));
      try (Ingester second = Ingester.start(config(redis, publisher, INDEX, "bench-ingester-2"))) {
        List<MeterRegistry> both = List.of(registry, second.meterRegistry());
        awaitShared(both, Duration.ofSeconds(60));
        saturation(publisher, both, json.putObject("saturation_two_replicas"));
        counters(registry, json.putObject("ingester_counters"));
      }
    }
  }

  private void summary(ObjectNode json) {
    ObjectNode offered = (ObjectNode) json.get("offered_load");
    ObjectNode saturation = (ObjectNode) json.get("saturation");
    double apply = json.path("ceiling").path("apply_blocks_per_s").asDouble();
    double blocks = saturation.path("blocks_per_s").asDouble();
    json.put("blocks_per_s", blocks);
    json.put("apply_blocks_per_s", apply);
    json.put("ingest_to_apply_ratio", Math.round(blocks / apply * 1000) / 1000.0);
    json.put(
        "two_replicas_blocks_per_s",
        json.path("saturation_two_replicas").path("blocks_per_s").asDouble());
    json.put("lag_p50_ms", offered.path("lag_p50_ms").asDouble());
    json.put("lag_p99_ms", offered.path("lag_p99_ms").asDouble());
    json.put("lag_within_5ms_pct", offered.path("lag_within_5ms_pct").asDouble());
    json.put("offered_blocks_per_s", offered.path("offered_blocks_per_s").asDouble());
    ObjectNode goals = json.putObject("goals");
    goals.put("one_replica_at_least_0_8_of_apply", blocks >= 0.8 * apply);
    goals.put(
        "lag_p99_at_most_5ms_at_the_offered_load",
        offered.path("lag_within_5ms_pct").asDouble() >= 99);
  }

  /** What one client applies to the same Redis: the same batches, 64 streams, one call each. */
  private void ceiling(LocalRedis redis, ObjectNode json) {
    int perStream = saturationBatchesPerPod();
    log.info("ingest: the ceiling, one client applying {} batches", perStream * PODS);
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toString());
        PrefixIndex index =
            PrefixIndex.builder().redis(connector).indexName(CEILING_INDEX).build()) {
      ApplyPump.run(index, feeds(Math.max(5, perStream / 10))); // warm-up, not measured
      List<ApplyPump.Feed> feeds = feeds(perStream);
      long start = System.nanoTime();
      long blocks = ApplyPump.run(index, feeds);
      long nanos = System.nanoTime() - start;
      json.put("blocks", blocks);
      json.put("apply_blocks_per_s", Reports.perSecond(blocks, nanos));
    }
    json.put(
        "how",
        "one client thread, one connection, its own index in the same Redis; each of 64 streams"
            + " applies the same kind of batches as the ingester receives, in order, one batch per"
            + " call with one call in flight, all streams at once (after a warm-up of a tenth as"
            + " many)");
  }

  /** {@code perStream} new batches for each of 64 streams of the ceiling's index. */
  private List<ApplyPump.Feed> feeds(int perStream) {
    List<ApplyPump.Feed> feeds = new ArrayList<>();
    for (int p = 0; p < PODS; p++) {
      List<KvEventBatch> batches = new ArrayList<>(perStream);
      for (int b = 0; b < perStream; b++) {
        batches.add(payloads.batch());
      }
      feeds.add(
          new ApplyPump.Feed(
              StreamId.of(IndexBenchmark.MODEL, String.format("ceiling-pod-%03d", p)),
              batches.iterator()));
    }
    return feeds;
  }

  static IngesterConfig config(
      LocalRedis redis, LightPublisher publisher, String index, String replica) {
    List<PodSpec> specs = new ArrayList<>();
    List<String> endpoints = publisher.endpoints();
    for (int p = 0; p < endpoints.size(); p++) {
      specs.add(
          PodSpec.of(
              String.format("ingest-pod-%03d", p), IndexBenchmark.MODEL, endpoints.get(p), null));
    }
    return IngesterConfig.builder()
        .redisUri(redis.uri().toString())
        .indexName(index)
        .replicaId(replica)
        .httpPort(-1)
        .pods(specs)
        .build();
  }

  private void offered(LightPublisher publisher, MeterRegistry registry, ObjectNode json) {
    log.info("ingest: offered load {} batches/s for {}", OFFERED_BATCHES_PER_S, offeredDuration());
    // Warm-up: a few seconds at the same rate, not recorded.
    send(publisher, List.of(registry), OFFERED_BATCHES_PER_S, Duration.ofSeconds(2));
    LagHistogram before = LagHistogram.of(lag(registry));
    double blocksBefore = storedBlocks(List.of(registry));
    long start = System.nanoTime();
    long batches = send(publisher, List.of(registry), OFFERED_BATCHES_PER_S, offeredDuration());
    long driveNanos = System.nanoTime() - start;
    double blocks = storedBlocks(List.of(registry)) - blocksBefore;
    LagHistogram lag = LagHistogram.of(lag(registry)).minus(before);
    json.put("batches_per_s", OFFERED_BATCHES_PER_S);
    json.put("batches", batches);
    json.put("blocks_published", batches * BLOCKS);
    json.put("offered_blocks_per_s", Math.round(batches * BLOCKS / (driveNanos / 1e9)));
    json.put("blocks_applied", Math.round(blocks));
    json.put("lag_p50_ms", lag.percentileMillis(0.50));
    json.put("lag_p90_ms", lag.percentileMillis(0.90));
    json.put("lag_p99_ms", lag.percentileMillis(0.99));
    json.put("lag_batches", lag.count());
    json.put("lag_within_5ms_pct", lag.percentAtMost(5));
    json.put(
        "lag_how",
        "kvindex.ingester.lag (event batch timestamp to applied in Redis): the Micrometer"
            + " percentile histogram's buckets over the measured window (after a warm-up at the"
            + " same rate); a percentile is its bucket's upper bound (buckets grow by about a"
            + " third)");
  }

  /**
   * Sends batches to pods in turn at {@code rate} per second for {@code duration} and waits until
   * they are applied; returns how many were sent.
   */
  private long send(
      LightPublisher publisher, List<MeterRegistry> registries, double rate, Duration duration) {
    int count = (int) Math.round(rate * duration.toNanos() / 1e9);
    List<byte[]> encoded = payloads.encoded(count);
    double before = storedBlocks(registries);
    long start = System.nanoTime();
    for (int k = 0; k < count; k++) {
      long wait = start + (long) (k * 1e9 / rate) - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      publisher.send(k % PODS, encoded.get(k));
    }
    awaitApplied(registries, before + (double) count * BLOCKS);
    return count;
  }

  private void saturation(
      LightPublisher publisher, List<MeterRegistry> registries, ObjectNode json) {
    int count = saturationBatchesPerPod() * PODS;
    log.info("ingest: saturation, {} batches, {} replica(s)", count, registries.size());
    List<byte[]> encoded = payloads.encoded(count);
    double blocksBefore = storedBlocks(registries);
    double callsBefore = applyCalls(registries);
    long cpuBefore = HostNoise.mainThreadCpuMicros(admin);
    long start = System.nanoTime();
    for (int k = 0; k < count; k++) {
      publisher.send(k % PODS, encoded.get(k));
    }
    long sendNanos = System.nanoTime() - start;
    long published = (long) count * BLOCKS;
    long caughtUp = awaitApplied(registries, blocksBefore + published);
    double blocks = storedBlocks(registries) - blocksBefore;
    long nanos = caughtUp - start;
    long cpuMicros = HostNoise.mainThreadCpuMicros(admin) - cpuBefore;
    json.put("replicas", registries.size());
    json.put("batches", count);
    json.put("blocks_published", published);
    json.put("published_blocks_per_s", Math.round(published / (sendNanos / 1e9)));
    json.put("blocks_applied", Math.round(blocks));
    json.put("blocks_not_applied", Math.round(published - blocks));
    json.put("blocks_per_s", Math.round(blocks / (nanos / 1e9)));
    json.put("until_applied_s", LatencyRecorder.roundTenth(nanos / 1e9));
    json.put(
        "redis_main_thread_cores",
        Math.round(cpuMicros * 1000.0 / Math.max(1, nanos) * 100) / 100.0);
    double calls = applyCalls(registries) - callsBefore;
    json.put("apply_calls", Math.round(calls));
    json.put("batches_per_apply_call", Math.round(count / Math.max(1, calls) * 100) / 100.0);
    json.put(
        "how",
        "every pod's batches sent at once; blocks_per_s = blocks applied from the first send"
            + " until the last one was applied (or the count stalled for "
            + STALL.toSeconds()
            + " s: then blocks_not_applied > 0); redis_main_thread_cores = the server main"
            + " thread's CPU time (INFO cpu) over the same span");
  }

  /** Every ingester counter at the end of the run (gaps, batch outcomes, ...). */
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
   * Waits until the ingesters have applied {@code target} stored blocks, or the count has not moved
   * for {@link #STALL} (longer than a lease TTL, so a stream that lost its lease and waits to take
   * it back is waited for); returns when the count last moved.
   */
  static long awaitApplied(List<MeterRegistry> registries, double target) {
    long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
    double last = storedBlocks(registries);
    long lastChange = System.nanoTime();
    while (last < target && System.nanoTime() - lastChange < STALL.toNanos()) {
      if (System.nanoTime() > deadline) {
        break;
      }
      LockSupport.parkNanos(Duration.ofMillis(2).toNanos());
      double now = storedBlocks(registries);
      if (now != last) {
        last = now;
        lastChange = System.nanoTime();
      }
    }
    return lastChange;
  }

  static long awaitApplied(MeterRegistry registry, double target) {
    return awaitApplied(List.of(registry), target);
  }

  static void awaitLeases(MeterRegistry registry, Duration timeout) {
    awaitLeases(List.of(registry), timeout);
  }

  private static void awaitLeases(List<MeterRegistry> registries, Duration timeout) {
    awaitUntil(registries, timeout, "every stream owned", r -> true);
  }

  /** Waits until the replicas own every stream between them, each some. */
  private static void awaitShared(List<MeterRegistry> registries, Duration timeout) {
    awaitUntil(registries, timeout, "the streams shared", r -> leases(r) > 0);
  }

  private static void awaitUntil(
      List<MeterRegistry> registries,
      Duration timeout,
      String what,
      Predicate<MeterRegistry> each) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (registries.stream().mapToDouble(IngestBenchmark::leases).sum() < PODS
        || !registries.stream().allMatch(each)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "not "
                + what
                + " after "
                + timeout
                + ": the replicas held "
                + registries.stream().map(r -> (long) leases(r)).toList()
                + " of "
                + PODS
                + " leases");
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

  private static double storedBlocks(List<MeterRegistry> registries) {
    return registries.stream().mapToDouble(IngestBenchmark::storedBlocks).sum();
  }

  private static double applyCalls(List<MeterRegistry> registries) {
    double calls = 0;
    for (MeterRegistry r : registries) {
      DistributionSummary s = r.find("kvindex.ingester.apply.batches").summary();
      calls += s == null ? 0 : s.count();
    }
    return calls;
  }

  static Timer lag(MeterRegistry registry) {
    Timer timer = registry.find("kvindex.ingester.lag").timer();
    if (timer == null) {
      throw new IllegalStateException("the ingester has no kvindex.ingester.lag timer");
    }
    return timer;
  }
}
