package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lettuce.core.api.StatefulRedisConnection;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lookup phase of {@code bench compare}: every index's depths checked against the fixture, then
 * a one-thread series that interleaves one lookup of each index with a PING (so all see the same
 * moment of the machine), then closed-loop load at 1 and 8 client threads per index, with Redis's
 * CPU per lookup (INFO commandstats, and the main thread's INFO cpu) and the client process's CPU
 * per lookup over each load. Not thread-safe.
 */
final class CompareLookups {
  private static final Logger log = LoggerFactory.getLogger(CompareLookups.class);
  static final List<Integer> THREADS = List.of(1, 8);

  private final BenchRedis redis;
  private final LookupFixture fixture;
  private final CompareSizes sizes;

  CompareLookups(BenchRedis redis, LookupFixture fixture, CompareSizes sizes) {
    this.redis = redis;
    this.fixture = fixture;
    this.sizes = sizes;
  }

  /** Runs the phase for {@code indexes}; writes each index's figures under its name. */
  void run(List<ComparedIndex> indexes, ObjectNode figures, ObjectNode details) {
    for (ComparedIndex index : indexes) {
      ObjectNode out = Reports.child(details, index.name());
      out.put("depth_mismatches", verify(index, out));
    }
    interleaved(indexes, figures, details.putObject("interleaved"));
    for (int threads : THREADS) {
      for (ComparedIndex index : indexes) {
        log.info("compare: {} lookups at {} thread(s)", index.name(), threads);
        ObjectNode load = Reports.child(details, index.name()).putObject("threads_" + threads);
        load(index, threads, load);
        ObjectNode fig = Reports.child(figures, index.name());
        fig.put("lookup_p50_us_" + threads + "t", load.path("p50_us").asDouble());
        fig.put("lookup_p99_us_" + threads + "t", load.path("p99_us").asDouble());
        fig.put("lookups_per_s_" + threads + "t", load.path("lookups_per_s").asDouble());
        if (threads == 1 && load.has("redis_commandstats_us_per_lookup")) {
          fig.put(
              "redis_cpu_us_per_lookup", load.path("redis_commandstats_us_per_lookup").asDouble());
          fig.put(
              "redis_main_thread_cpu_us_per_lookup",
              load.path("redis_main_thread_cpu_us_per_lookup").asDouble());
        }
        fig.put(
            "client_cpu_us_per_lookup_" + threads + "t",
            load.path("client_cpu_us_per_lookup").asDouble());
      }
    }
  }

  /** Every prompt's depths against what the fixture stored; returns the pods that differ. */
  private long verify(ComparedIndex index, ObjectNode out) {
    long wrong = 0;
    int checked = Math.min(fixture.prompts.size(), sizes.verifyPrompts());
    for (int p = 0; p < checked; p++) {
      int[] got = index.depths(fixture.prompts.get(p), fixture.pods);
      int[] want = fixture.depths.get(p);
      for (int c = 0; c < want.length; c++) {
        if (got[c] != want[c]) {
          wrong++;
        }
      }
    }
    out.put("prompts_verified", checked);
    if (wrong > 0) {
      log.warn("compare: {} gave {} pod depths that differ from what was stored", index, wrong);
    }
    return wrong;
  }

  /** One lookup of each index and one PING per iteration, the order rotating; one thread. */
  private void interleaved(List<ComparedIndex> indexes, ObjectNode figures, ObjectNode out) {
    List<LatencyRecorder> recorders = new ArrayList<>();
    indexes.forEach(i -> recorders.add(new LatencyRecorder()));
    LatencyRecorder ping = new LatencyRecorder();
    int warmup = sizes.interleavedIterations() / 5;
    try (StatefulRedisConnection<byte[], byte[]> connection = redis.binaryConnection()) {
      for (int i = 0; i < warmup + sizes.interleavedIterations(); i++) {
        long[] prompt = fixture.prompts.get(i % fixture.prompts.size());
        for (int k = 0; k < indexes.size(); k++) {
          int which = (i + k) % indexes.size();
          long start = System.nanoTime();
          indexes.get(which).depths(prompt, fixture.pods);
          long nanos = System.nanoTime() - start;
          if (i >= warmup) {
            recorders.get(which).recordNanos(nanos);
          }
        }
        long pingNanos = Baselines.pingOnce(connection);
        if (i >= warmup) {
          ping.recordNanos(pingNanos);
        }
      }
    }
    ping.writeTo(out, "ping");
    for (int k = 0; k < indexes.size(); k++) {
      String name = indexes.get(k).name();
      recorders.get(k).writeTo(out, name);
      double ratio = recorders.get(k).micros(50) / ping.micros(50);
      Reports.child(figures, name).put("lookup_to_ping_p50_ratio", Math.round(ratio * 100) / 100.0);
    }
    out.put("warmup", warmup);
    out.put("iterations", sizes.interleavedIterations());
    out.put(
        "how",
        "one client thread; per iteration one lookup of each index (the order rotating) and one"
            + " PING on a connection of its own, so every index sees the same moments of the"
            + " machine");
  }

  /** Closed-loop load of one index, with Redis's and this process's CPU over it. */
  private void load(ComparedIndex index, int threads, ObjectNode out) {
    List<long[]> prompts = fixture.prompts;
    LoadRun.Operation lookup =
        (thread, i) -> {
          long[] prompt = prompts.get((int) ((i * 8 + thread) % prompts.size()));
          index.depths(prompt, fixture.pods);
          return true;
        };
    LoadRun.measure(
        lookup, threads, Duration.ZERO, sizes.warmup(), Reports.MAPPER.createObjectNode());
    CommandStats statsBefore = CommandStats.read(redis.admin());
    long redisCpuBefore = HostNoise.mainThreadCpuMicros(redis.admin());
    long processCpuBefore = processCpuNanos();
    LoadRun.measure(lookup, threads, Duration.ZERO, sizes.measured(), out);
    long processCpu = processCpuNanos() - processCpuBefore;
    long redisCpu = HostNoise.mainThreadCpuMicros(redis.admin()) - redisCpuBefore;
    Map<String, Map<String, Number>> stats = CommandStats.read(redis.admin()).since(statsBefore);
    double allLookups = Math.max(1, out.path("lookups").asLong());
    out.put("client_cpu_us_per_lookup", round(processCpu / 1000.0 / allLookups));
    if (index instanceof InProcessIndex) {
      return;
    }
    double usec = 0;
    for (Map<String, Number> command : stats.values()) {
      usec += command.get("calls").doubleValue() * command.get("mean_us").doubleValue();
    }
    out.put("redis_commandstats_us_per_lookup", round(usec / allLookups));
    out.put("redis_main_thread_cpu_us_per_lookup", round(redisCpu / allLookups));
    out.set("redis_commandstats", Reports.MAPPER.valueToTree(stats));
    out.put(
        "cpu_how",
        "Redis: INFO commandstats (execution time of the commands, parsing and replies excluded)"
            + " and INFO cpu of the main thread (everything) over the measured load (after its"
            + " warm-up), divided by its lookups; client: this JVM's CPU time (client threads,"
            + " lettuce's I/O threads, JIT, GC) over the same window");
  }

  private static double round(double value) {
    return Math.round(value * 100) / 100.0;
  }

  /** This JVM's CPU time so far, in ns; 0 where the platform does not say. */
  static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return Math.max(0, os.getProcessCpuTime());
    }
    return 0;
  }
}
