package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.GcResult;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.StreamId;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The index-size sweep of {@code bench scale}: one kvindex index grown through {@link
 * PrefixIndex#apply} point by point ({@link LookupFixture}: 64 pods, 256-block prompts); at each
 * point the growth's apply blocks/s and Redis CPU per block, memory per entry (INFO used_memory),
 * lookup p50 against PING, and the time of one whole GC pass (a small pod purged, then {@code
 * collectGarbage} until done, which scans every field of the group). Before each point it checks
 * that the point fits: Redis's used memory predicted from the last point's bytes per entry must
 * stay under {@link #REDIS_LIMIT_BYTES} and leave {@link #HEADROOM_BYTES} of the machine's
 * available memory; the sweep stops there and says so. Not thread-safe.
 */
final class IndexSizeSweep {
  private static final Logger log = LoggerFactory.getLogger(IndexSizeSweep.class);
  static final long REDIS_LIMIT_BYTES = 14L << 30;
  static final long HEADROOM_BYTES = 4L << 30;
  private static final int PODS = 64;
  private static final int PROMPT_BLOCKS = 256;
  private static final int PROBE_BLOCKS = 256;

  private IndexSizeSweep() {}

  static ObjectNode run(BenchRedis redis, ScaleSizes sizes, Path dir) {
    long largest = sizes.indexSizes().get(sizes.indexSizes().size() - 1);
    LookupFixture fixture = LookupFixture.generate(17, PODS, PROMPT_BLOCKS, largest);
    ObjectNode json = Reports.MAPPER.createObjectNode();
    ArrayNode points = json.putArray("points");
    redis.flushIfOwned();
    long base = redis.usedMemory();
    json.put("used_memory_empty", base);
    int done = 0;
    double bytesPerEntry = 0;
    long lastUsed = base;
    long memAvailableAtEnd = -1;
    try (KvindexContender kvindex =
            new KvindexContender(redis.connector(), "bench-scale-size", IndexBenchmark.MODEL, 1);
        StatefulRedisConnection<byte[], byte[]> ping = redis.binaryConnection()) {
      for (long target : sizes.indexSizes()) {
        String stop = fits(redis, base, bytesPerEntry, target);
        if (stop != null) {
          json.put("stopped_before", target);
          json.put("stopped_because", stop);
          log.warn("scale: index-size sweep stops before {} entries: {}", target, stop);
          break;
        }
        int to = promptsFor(fixture, done, target);
        ObjectNode point = points.addObject();
        grow(redis, kvindex, fixture, done, to, point);
        done = to;
        bytesPerEntry = (redis.usedMemory() - base) / (double) fixture.entries(0, to);
        point.put("memory_bytes_per_entry", LatencyRecorder.roundTenth(bytesPerEntry));
        lastUsed = redis.usedMemory();
        memAvailableAtEnd = memAvailable();
        point.put("used_memory", lastUsed);
        lookups(kvindex, fixture, to, sizes, ping, point);
        gcPass(redis, kvindex.index(), target, point);
      }
    } finally {
      redis.flushIfOwned();
    }
    if (!json.has("stopped_before")) {
      json.put("stopped_before", "none: every point ran");
      long room = (long) ((REDIS_LIMIT_BYTES - lastUsed) / Math.max(bytesPerEntry, 1));
      json.put(
          "room_left_entries",
          Math.min(
              room, (long) ((memAvailableAtEnd - HEADROOM_BYTES) / Math.max(bytesPerEntry, 1))));
      json.put(
          "room_note",
          "entries more the last point's bytes per entry would have fitted under the "
              + (REDIS_LIMIT_BYTES >> 30)
              + " GiB Redis limit and the machine's available memory less "
              + (HEADROOM_BYTES >> 30)
              + " GiB, at its end");
    }
    json.put(
        "how",
        "one index grown point by point through apply (64 streams, 64-block batches, one"
            + " connection); lookups: one thread, a random earlier prompt with all 64 pods as"
            + " candidates, each followed by a PING; GC pass: a "
            + PROBE_BLOCKS
            + "-block pod stored, purged, then collectGarbage(group, 16) until done (one pass over"
            + " every field of the group's hash), wall time including each call's round trip");
    ScaleCharts.indexSize(json, dir.resolve("index_size.png"));
    return json;
  }

  /** Null if a point of {@code target} entries fits in memory, else why not. */
  static String fits(BenchRedis redis, long base, double bytesPerEntry, long target) {
    long used = redis.usedMemory();
    long predicted = base + (long) (bytesPerEntry * target);
    long available = memAvailable();
    if (predicted > REDIS_LIMIT_BYTES) {
      return "Redis would use about "
          + (predicted >> 20)
          + " MiB, over the "
          + (REDIS_LIMIT_BYTES >> 20)
          + " MiB limit";
    }
    if (available >= 0 && predicted - used > available - HEADROOM_BYTES) {
      return "the machine has "
          + (available >> 20)
          + " MiB available; the point needs about "
          + ((predicted - used) >> 20)
          + " MiB more, leaving less than "
          + (HEADROOM_BYTES >> 20)
          + " MiB";
    }
    return null;
  }

  private static int promptsFor(LookupFixture fixture, int from, long target) {
    long entries = fixture.entries(0, from);
    int to = from;
    while (to < fixture.prompts.size() && entries < target) {
      entries += fixture.entries(to, to + 1);
      to++;
    }
    return to;
  }

  private static void grow(
      BenchRedis redis,
      KvindexContender kvindex,
      LookupFixture fixture,
      int from,
      int to,
      ObjectNode point) {
    log.info("scale: growing the index to {} entries", fixture.entries(0, to));
    long cpuBefore = HostNoise.mainThreadCpuMicros(redis.admin());
    long start = System.nanoTime();
    long blocks = kvindex.store(fixture.feeds(IndexBenchmark.MODEL, 64, from, to));
    long nanos = System.nanoTime() - start;
    long cpu = HostNoise.mainThreadCpuMicros(redis.admin()) - cpuBefore;
    point.put("entries", fixture.entries(0, to));
    point.put("entries_millions", Math.round(fixture.entries(0, to) / 1e4) / 100.0);
    point.put("prompts", to);
    point.put("grown_blocks", blocks);
    point.put("apply_blocks_per_s", Reports.perSecond(blocks, nanos));
    point.put("redis_cpu_us_per_block", Math.round(cpu * 1000.0 / blocks) / 1000.0);
  }

  private static void lookups(
      KvindexContender kvindex,
      LookupFixture fixture,
      int prompts,
      ScaleSizes sizes,
      StatefulRedisConnection<byte[], byte[]> ping,
      ObjectNode point) {
    List<long[]> stored = fixture.prompts.subList(0, prompts);
    int stride = Math.max(1, prompts / 97);
    SweepLookups measured =
        SweepLookups.measure(
            List.of(kvindex),
            new StridedList(stored, stride),
            p -> fixture.pods,
            sizes.pointBudget(),
            sizes.minLookups() * 4,
            ping);
    point.put("lookup_p50_us", measured.recorders.get(0).micros(50));
    point.put("lookup_p99_us", measured.recorders.get(0).micros(99));
    point.put("ping_p50_us", measured.ping.micros(50));
    point.put("lookups", measured.iterations);
  }

  private static void gcPass(BenchRedis redis, PrefixIndex index, long target, ObjectNode point) {
    StreamId probe = StreamId.of(IndexBenchmark.MODEL, "gc-probe-" + target);
    long[] chain = LookupFixture.randomChain(new java.util.Random(target), PROBE_BLOCKS);
    ApplyPump.run(
        index,
        List.of(
            new ApplyPump.Feed(
                probe, new ChainFeed(List.of(ChainFeed.Span.prefix(chain, PROBE_BLOCKS)), 64))));
    Lease token = index.acquireLease(probe, ApplyPump.OWNER, Duration.ofHours(2)).orElseThrow();
    index.purge(probe, token, PurgeMode.KEEP_WATERMARK);
    int group = index.groupOf(probe.model(), probe.pod());
    long cpuBefore = HostNoise.mainThreadCpuMicros(redis.admin());
    long start = System.nanoTime();
    long calls = 0;
    long fields = 0;
    GcResult step;
    do {
      step = index.collectGarbage(group, PurgeBenchmark.GC_BUDGET);
      calls++;
      fields += step.fieldsScanned();
    } while (!step.done());
    long nanos = System.nanoTime() - start;
    point.put("gc_pass_s", Math.round(nanos / 1e6) / 1000.0);
    point.put("gc_calls", calls);
    point.put("gc_fields_scanned", fields);
    point.put("gc_redis_cpu_s", (HostNoise.mainThreadCpuMicros(redis.admin()) - cpuBefore) / 1e6);
  }

  /** MemAvailable of /proc/meminfo in bytes; -1 where unreadable. */
  static long memAvailable() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemAvailable:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }

  /** Every {@code stride}-th element of a list, so lookups spread over the whole index. */
  private static final class StridedList extends java.util.AbstractList<long[]> {
    private final List<long[]> list;
    private final int stride;

    StridedList(List<long[]> list, int stride) {
      this.list = list;
      this.stride = stride;
    }

    @Override
    public long[] get(int i) {
      return list.get(i * stride);
    }

    @Override
    public int size() {
      return (list.size() + stride - 1) / stride;
    }
  }
}
