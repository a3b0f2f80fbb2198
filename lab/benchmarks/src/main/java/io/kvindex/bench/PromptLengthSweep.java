package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prompt-length sweep of {@code bench scale}: per prompt length, a fresh index of kvindex and
 * of the llm-d layout holding the same {@link LookupFixture} (64 pods, all candidates), lookup p50
 * and p99 of both measured interleaved on one thread, and the router's hashing of such a prompt
 * ({@code sha256_cbor} over its tokens, 16 per block) timed apart. Not thread-safe.
 */
final class PromptLengthSweep {
  private static final Logger log = LoggerFactory.getLogger(PromptLengthSweep.class);
  private static final int PODS = 64;
  private static final int MIN_PROMPTS = 8;
  private static final int BLOCK_SIZE = 16;

  private PromptLengthSweep() {}

  static ObjectNode run(BenchRedis redis, ScaleSizes sizes, Path dir) {
    ObjectNode json = Reports.MAPPER.createObjectNode();
    ArrayNode points = json.putArray("points");
    for (int length : sizes.promptLengths()) {
      log.info("scale: prompt length {} blocks", length);
      points.add(point(redis, sizes, length));
    }
    json.put(
        "how",
        "per length: "
            + PODS
            + " pods (8 hold each prompt whole, 24 a random prefix), all candidates; at least "
            + sizes.promptMinEntries()
            + " entries and "
            + MIN_PROMPTS
            + " prompts; kvindex (database 0) and the llm-d layout (database 1) filled alike, then"
            + " one thread alternates a lookup of each with a PING (ping_after_kvindex: the PINGs"
            + " that followed a kvindex lookup; kvindex_hmget_redis_us: INFO commandstats' mean"
            + " for the sweep's HMGETs, all kvindex's); hashing_us is the router's"
            + " BlockHasher sha256_cbor over the prompt's tokens ("
            + BLOCK_SIZE
            + " per block), measured apart on this thread");
    ScaleCharts.promptLength(json, dir.resolve("prompt_length.png"));
    return json;
  }

  private static ObjectNode point(BenchRedis redis, ScaleSizes sizes, int length) {
    long entries = Math.max(sizes.promptMinEntries(), (long) MIN_PROMPTS * 20 * length);
    LookupFixture fixture = LookupFixture.generate(length, PODS, length, entries);
    ObjectNode point = Reports.MAPPER.createObjectNode();
    point.put("prompt_blocks", length);
    point.put("entries", fixture.entries);
    point.put("prompts", fixture.prompts.size());
    redis.flushIfOwned();
    List<ComparedIndex> indexes = new ArrayList<>();
    try {
      indexes.add(
          new KvindexContender(redis.connector(), "bench-scale-prompt", IndexBenchmark.MODEL, 1));
      indexes.add(new LlmdLayout(redis.uri(), 1));
      for (ComparedIndex index : indexes) {
        index.store(fixture.feeds(IndexBenchmark.MODEL, 64));
        int[] got = index.depths(fixture.prompts.get(0), fixture.pods);
        point.put(
            index.name() + "_first_prompt_correct",
            java.util.Arrays.equals(got, fixture.depths.get(0)));
      }
      SweepLookups measured;
      CommandStats before = CommandStats.read(redis.admin());
      try (StatefulRedisConnection<byte[], byte[]> ping = redis.binaryConnection()) {
        measured =
            SweepLookups.measure(
                indexes,
                fixture.prompts,
                p -> fixture.pods,
                sizes.pointBudget(),
                sizes.minLookups(),
                ping);
      }
      for (int k = 0; k < indexes.size(); k++) {
        String name = indexes.get(k).name();
        point.put(name + "_p50_us", measured.recorders.get(k).micros(50));
        point.put(name + "_p99_us", measured.recorders.get(k).micros(99));
      }
      point.put("ping_p50_us", measured.ping.micros(50));
      point.put("lookups", measured.iterations);
      // kvindex's lookups are the sweep's only HMGETs (the layout reads with HKEYS): Redis's own
      // time for the read, apart from the network and the client.
      Map<String, Number> hmget =
          CommandStats.read(redis.admin()).since(before).getOrDefault("hmget", Map.of());
      if (!hmget.isEmpty()) {
        point.put("kvindex_hmget_redis_us", hmget.get("mean_us").doubleValue());
        point.put(
            "kvindex_hmgets_per_lookup",
            LatencyRecorder.roundTenth(
                hmget.get("calls").doubleValue() / (measured.iterations + SweepLookups.WARMUP)));
      }
      for (int k = 0; k < indexes.size(); k++) {
        if (indexes.get(k) instanceof KvindexContender) {
          double after = measured.pingAfter.get(k).micros(50);
          point.put("ping_after_kvindex_p50_us", after);
          point.put(
              "kvindex_to_ping_after",
              Math.round(measured.recorders.get(k).micros(50) / after * 100) / 100.0);
        }
      }
    } finally {
      indexes.forEach(ComparedIndex::close);
      redis.flushIfOwned();
    }
    point.put("hashing_us", hashingMicros(length));
    return point;
  }

  /** The mean time of hashing a prompt of {@code blocks} full blocks, in microseconds. */
  static double hashingMicros(int blocks) {
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", BLOCK_SIZE);
    int[] tokens = new int[blocks * BLOCK_SIZE];
    Random random = new Random(blocks);
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(150_000);
    }
    long sink = 0;
    for (int i = 0; i < 20; i++) {
      sink += hasher.blockHashes(tokens)[0];
    }
    long start = System.nanoTime();
    int calls = 0;
    while (calls < 20 || System.nanoTime() - start < 300_000_000L) {
      sink += hasher.blockHashes(tokens)[0];
      calls++;
    }
    double micros = (System.nanoTime() - start) / 1000.0 / calls;
    return sink == 42 ? micros + 0 : LatencyRecorder.roundTenth(micros);
  }
}
