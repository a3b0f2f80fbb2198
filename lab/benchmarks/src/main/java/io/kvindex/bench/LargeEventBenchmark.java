package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.StreamId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.function.IntFunction;

/**
 * The longest single script call while one event of many blocks (a long prompt's prefill: 1 024, 8
 * 192 and 32 768 blocks) is applied, in engine and token key modes, as shipped (chunks of {@link
 * PrefixIndexBuilder#DEFAULT_APPLY_CHUNK_BLOCKS}) and, for reference, at the largest chunk (8 192:
 * about one call per event, as before chunking). Times are SLOWLOG's execution times; each size is
 * applied {@link #REPEATS} times, each a new chain on a fresh stream. A quick run (a smoke check of
 * the same code path) applies 1 024 and 8 192 blocks, once each. Not thread-safe.
 */
final class LargeEventBenchmark {
  static final List<Integer> SIZES = List.of(1_024, 8_192, 32_768);
  static final List<Integer> QUICK_SIZES = List.of(1_024, 8_192);
  private static final int REPEATS = 3;
  private static final int BLOCK_SIZE = 16;
  private static final int UNCHUNKED = 8_192;

  /** Chunk sizes compared on one event of {@link #BY_CHUNK_SIZE} blocks, to choose the default. */
  private static final List<Integer> CHUNKS = List.of(32, 64, 128, 256, 512);

  private static final int BY_CHUNK_SIZE = 8_192;

  private final BenchRedis redis;
  private final IntFunction<PrefixIndex> open;
  private final String runId;
  private final List<Integer> sizes;
  private final int repeats;
  private int streams;

  /**
   * @param open an index with the given chunk size, under a name of its own
   * @param quick the quick run's sizes, each applied once
   */
  LargeEventBenchmark(
      BenchRedis redis, String runId, IntFunction<PrefixIndex> open, boolean quick) {
    this.redis = redis;
    this.runId = runId;
    this.open = open;
    this.sizes = sizes(quick);
    this.repeats = quick ? 1 : REPEATS;
  }

  /** The event sizes a run applies. */
  static List<Integer> sizes(boolean quick) {
    return quick ? QUICK_SIZES : SIZES;
  }

  void run(ObjectNode json) {
    ObjectNode shipped = json.putObject("apply_max_command_us");
    ObjectNode shippedToken = json.putObject("apply_max_command_us_token_mode");
    ObjectNode unchunked = json.putObject("apply_unchunked_max_command_us");
    ObjectNode perSecond = json.putObject("apply_large_event_blocks_per_s");
    for (int size : sizes) {
      String key = Integer.toString(size);
      long[] engine = measure(PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS, KeyMode.ENGINE, size);
      shipped.put(key, engine[0]);
      perSecond.put(key, engine[1]);
      shippedToken.put(
          key, measure(PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS, KeyMode.TOKEN, size)[0]);
      unchunked.put(key, measure(UNCHUNKED, KeyMode.ENGINE, size)[0]);
    }
    ObjectNode byChunk = json.putObject("apply_max_command_us_by_chunk");
    ObjectNode medianByChunk = json.putObject("apply_median_call_us_by_chunk");
    for (int chunk : CHUNKS) {
      ObjectNode at = byChunk.putObject(Integer.toString(chunk));
      ObjectNode median = medianByChunk.putObject(Integer.toString(chunk));
      for (KeyMode mode : KeyMode.values()) {
        long[] m = measure(chunk, mode, BY_CHUNK_SIZE);
        at.put(mode.name().toLowerCase(Locale.ROOT), m[0]);
        median.put(mode.name().toLowerCase(Locale.ROOT), m[2]);
      }
    }
    ObjectNode detail = json.putObject("apply_large_events");
    detail.put("by_chunk_event_blocks", BY_CHUNK_SIZE);
    detail.put("chunk_blocks", PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS);
    detail.put("unchunked_reference_chunk_blocks", UNCHUNKED);
    detail.put("repeats", repeats);
    detail.put("block_size_tokens", BLOCK_SIZE);
    detail.put(
        "note",
        "one BlockStored of N blocks per batch; max SLOWLOG execution time of any script call"
            + " (threshold "
            + SlowLogWatch.THRESHOLD_MICROS
            + " us); blocks_per_s is the engine-mode wall rate of one such event, chunks included");
  }

  /**
   * The longest call (µs), blocks per second, and the median logged script call (µs) for one size:
   * on a busy host the longest call measures the host's preemption as much as the script, the
   * median what one chunk costs.
   */
  private long[] measure(int chunk, KeyMode mode, int size) {
    Random random = new Random(size * 31L + chunk);
    long max = 0;
    long blocks = 0;
    long nanos = 0;
    LatencyRecorder median;
    try (PrefixIndex index = open.apply(chunk);
        SlowLogWatch watch = SlowLogWatch.start(redis.admin())) {
      for (int r = 0; r < repeats; r++) {
        String model = mode == KeyMode.TOKEN ? "token-model" : IndexBenchmark.MODEL;
        StreamId stream = StreamId.of(model, "large-" + runId + "-" + streams++);
        Lease lease =
            index.acquireLease(stream, ApplyPump.OWNER, Duration.ofHours(2)).orElseThrow();
        KvEventBatch batch = KvEventBatch.of(0.0, List.of(event(random, size)), null);
        watch.drain();
        long start = System.nanoTime();
        ApplyStatus status = index.apply(stream, mode, 0, lease, batch).status();
        nanos += System.nanoTime() - start;
        if (status != ApplyStatus.APPLIED) {
          throw new IllegalStateException("a large event was not applied: " + status);
        }
        blocks += size;
        watch.drain();
        max = Math.max(max, watch.maxMicros());
      }
      median = watch.loggedScripts();
    }
    return new long[] {
      max, Math.round(Reports.perSecond(blocks, nanos)), Math.round(median.micros(50))
    };
  }

  private static BlockStored event(Random random, int size) {
    long[] chain = LookupFixture.randomChain(random, size);
    List<Long> hashes = new ArrayList<>(size);
    for (long h : chain) {
      hashes.add(h);
    }
    List<Integer> tokens = new ArrayList<>(size * BLOCK_SIZE);
    for (int i = 0; i < size * BLOCK_SIZE; i++) {
      tokens.add(random.nextInt(100_000));
    }
    return BlockStored.of(hashes, null, tokens, BLOCK_SIZE);
  }
}
