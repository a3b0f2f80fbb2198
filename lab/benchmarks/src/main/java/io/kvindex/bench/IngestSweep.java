package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.localredis.LocalRedis;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ingest sweep of {@code bench scale}: one ingester replica follows 64 pods whose events a
 * {@link LightPublisher} replays (pre-encoded map-era batches of one fresh 64-block chain with its
 * 1 024 token ids each), into a local standalone Redis. Offered loads rise step by step; each step
 * measures the blocks applied during it (achieved) and the lag p99 from event timestamp to applied.
 * The knee is the highest offered load whose achieved load still tracks it (at least {@link
 * #TRACKS} of it, and the backlog drained right after); the sweep stops at the first step past it.
 * Not thread-safe.
 */
final class IngestSweep {
  private static final Logger log = LoggerFactory.getLogger(IngestSweep.class);
  private static final int PODS = 64;
  private static final int BLOCKS_PER_BATCH = IngestPayloads.BLOCKS_PER_BATCH;
  static final double TRACKS = 0.9;
  private static final String INDEX = "bench-scale-ingest";

  private final IngestPayloads payloads = new IngestPayloads(29);

  private IngestSweep() {}

  static ObjectNode run(ScaleSizes sizes, Path dir) {
    return new IngestSweep().sweep(sizes, dir);
  }

  private ObjectNode sweep(ScaleSizes sizes, Path dir) {
    ObjectNode json = Reports.MAPPER.createObjectNode();
    ArrayNode points = json.putArray("points");
    try (LocalRedis redis = LocalRedis.start();
        LightPublisher publisher = new LightPublisher(PODS);
        Ingester ingester = Ingester.start(config(redis, publisher))) {
      MeterRegistry registry = ingester.meterRegistry();
      IngestBenchmark.awaitLeases(registry, Duration.ofSeconds(60));
      step(publisher, registry, 2_000, Duration.ofSeconds(2), Reports.MAPPER.createObjectNode());
      int knee = 0;
      for (int offered : sizes.offeredBlocksPerSecond()) {
        log.info("scale: ingest at {} blocks/s offered", offered);
        ObjectNode point = points.addObject();
        boolean tracks = step(publisher, registry, offered, sizes.ingestStep(), point);
        if (!tracks) {
          break;
        }
        knee = offered;
      }
      json.put("knee_offered_blocks_per_s", knee);
      json.put(
          "knee_note",
          knee == sizes.offeredBlocksPerSecond().get(sizes.offeredBlocksPerSecond().size() - 1)
              ? "every offered load was tracked: the knee is at or above the last"
              : "the step after the knee is the first whose achieved load fell short");
    }
    json.put(
        "how",
        "one ingester replica, 64 pods replayed by one light publisher thread (pre-encoded"
            + " map-era BlockStored batches of 64 blocks with their token ids, stamped when sent),"
            + " a local standalone Redis, all on this machine; achieved = blocks applied during the"
            + " step / its length; a step tracks when achieved >= "
            + TRACKS
            + " x offered and the backlog drains within 15 s after it; lag = the ingester's"
            + " kvindex.ingester.lag histogram over the step (bucket upper bounds)");
    ScaleCharts.ingest(json, dir.resolve("ingest.png"));
    return json;
  }

  /** Offers {@code offered} blocks/s for {@code length}; returns whether it was tracked. */
  private boolean step(
      LightPublisher publisher,
      MeterRegistry registry,
      int offered,
      Duration length,
      ObjectNode point) {
    int batches =
        (int) Math.max(PODS, Math.round(offered * length.toNanos() / 1e9 / BLOCKS_PER_BATCH));
    List<byte[]> encoded = payloads.encoded(batches);
    double before = IngestBenchmark.storedBlocks(registry);
    LagHistogram lagBefore = lagNow(registry);
    double interval = 1e9 * BLOCKS_PER_BATCH / offered;
    long start = System.nanoTime();
    for (int k = 0; k < batches; k++) {
      long wait = start + (long) (k * interval) - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      publisher.send(k % PODS, encoded.get(k));
    }
    long end = System.nanoTime();
    double during = IngestBenchmark.storedBlocks(registry) - before;
    double target = before + (double) batches * BLOCKS_PER_BATCH;
    long lastMove = IngestBenchmark.awaitApplied(registry, target);
    boolean drained = IngestBenchmark.storedBlocks(registry) >= target;
    LagHistogram lag = lagNow(registry);
    lag = lagBefore == null ? lag : lag.minus(lagBefore);
    double achieved = during / ((end - start) / 1e9);
    point.put("offered_blocks_per_s", offered);
    point.put(
        "sent_blocks_per_s",
        Math.round((double) batches * BLOCKS_PER_BATCH / ((end - start) / 1e9)));
    point.put("achieved_blocks_per_s", Math.round(achieved));
    point.put("drained", drained);
    point.put("drain_s", LatencyRecorder.roundTenth(Math.max(0, lastMove - end) / 1e9));
    point.put("lag_p50_ms", lag.percentileMillis(0.5));
    point.put("lag_p99_ms", lag.percentileMillis(0.99));
    point.put("lag_batches", lag.count());
    boolean tracks = drained && achieved >= TRACKS * offered;
    point.put("tracks", tracks);
    return tracks;
  }

  /** The ingester's lag histogram now; null before its first applied batch made the timer. */
  private static LagHistogram lagNow(MeterRegistry registry) {
    return registry.find("kvindex.ingester.lag").timer() == null
        ? null
        : LagHistogram.of(IngestBenchmark.lag(registry));
  }

  private static IngesterConfig config(LocalRedis redis, LightPublisher publisher) {
    return IngestBenchmark.config(redis, publisher, INDEX, "bench-scale-ingester-1");
  }
}
