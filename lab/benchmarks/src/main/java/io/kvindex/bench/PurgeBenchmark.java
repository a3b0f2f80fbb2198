package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.index.GcResult;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.index.redis.KeySchema;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The purge phase of {@code bench index}: per pod size, the longest single Redis command (from
 * SLOWLOG) of the purge and of its incremental cleanup, and the cleanup's wall time; then the same
 * for a naive purge (one script: SMEMBERS, then SREM of every member) over a set of that size. Not
 * thread-safe.
 */
final class PurgeBenchmark {
  static final int GC_BUDGET = PrefixIndexBuilder.DEFAULT_GC_BUDGET;
  private static final Logger log = LoggerFactory.getLogger(PurgeBenchmark.class);

  private final BenchRedis redis;
  private final IndexSizes sizes;
  private final String runId;
  private final Function<String, PrefixIndex> indexes;

  PurgeBenchmark(
      BenchRedis redis, IndexSizes sizes, String runId, Function<String, PrefixIndex> indexes) {
    this.redis = redis;
    this.sizes = sizes;
    this.runId = runId;
    this.indexes = indexes;
  }

  void run(ObjectNode json) {
    ObjectNode max = json.putObject("purge_max_command_us");
    ObjectNode cleanup = json.putObject("purge_cleanup_ms");
    ObjectNode naiveMax = json.putObject("naive_purge_max_command_us");
    ObjectNode gcMean = json.putObject("purge_gc_mean_command_us");
    ObjectNode maxCpu = json.putObject("purge_max_command_cpu_us");
    ObjectNode maxUndisturbed = json.putObject("purge_max_undisturbed_call_us");
    ObjectNode details = json.putObject("purge");
    details.put(
        "setup",
        "the purged pod holds one chain of N blocks (stored 64 per batch); a second pod holds the"
            + " chain's first N/2 blocks, so cleanup must edit shared block entries, not only"
            + " delete; purge, then collectGarbage(group, "
            + GC_BUDGET
            + ") until done; commands of at least "
            + SlowLogWatch.THRESHOLD_MICROS
            + " us taken from SLOWLOG (read after every call; cleanup_ms excludes the reading),"
            + " means from INFO commandstats; host_noise"
            + " counts what the machine did to Redis over the same span (its main thread's CPU"
            + " time, the kernel descheduling it, hypervisor steal): a command far longer than its"
            + " peers while those grew was stretched, not busy; call_cpu and max_command_cpu_us are"
            + " the Redis main thread's CPU time per purge or GC call (INFO cpu before and after"
            + " each call, less the INFO's own cost), which the machine's noise does not stretch;"
            + " an upper bound, as the window also holds Redis's cron and its reply writes;"
            + " calls_descheduled counts the calls during which the kernel took Redis's CPU away"
            + " (its main thread's involuntary context switches, /proc, just before and after each"
            + " call); over_1ms_calls lists each call over 1 ms with Redis's main thread's time on"
            + " its CPU and waiting for it over the call's window (/proc schedstat, to the ns, read"
            + " while Redis sleeps; excludes hypervisor steal, includes interrupts);"
            + " max_undisturbed_call_us is the longest call during which Redis was not"
            + " descheduled and ran at least as long as the call took (time it did not run, such"
            + " as hypervisor steal, shows as a call longer than Redis's running time)");
    details.put("redis_mem_allocator", memAllocator());
    details.put(
        "naive_setup",
        "one set of N 8-byte members; one EVAL: SMEMBERS, then SREM of each member (a lower bound"
            + " on a naive purge, which would also edit N block keys)");
    // Only this part runs with Redis on a CPU of its own: its figure is how long a command runs,
    // which the benchmark's own threads would otherwise stretch. Lookup and apply keep all CPUs.
    try (CpuPlacement placement = redis.ownCpu()) {
      details.put("cpu_placement", placement.description());
      for (int size : sizes.purgePodSizes()) {
        ObjectNode detail = details.putObject(Integer.toString(size));
        purge(size, detail);
        naive(size, detail);
        max.put(Integer.toString(size), detail.path("max_command_us").asLong());
        cleanup.put(Integer.toString(size), detail.path("cleanup_ms").asDouble());
        naiveMax.put(Integer.toString(size), detail.path("naive_max_command_us").asLong());
        maxCpu.put(Integer.toString(size), detail.path("max_command_cpu_us").asLong());
        if (detail.has("max_undisturbed_call_us")) {
          maxUndisturbed.put(
              Integer.toString(size), detail.path("max_undisturbed_call_us").asLong());
        }
        gcMean.put(
            Integer.toString(size),
            detail.path("commandstats").path("evalsha").path("mean_us").asDouble());
      }
    }
  }

  private void purge(int size, ObjectNode detail) {
    String name = "bench-purge-" + size + "-" + runId;
    long[] chain = LookupFixture.randomChain(new Random(size), size);
    StreamId target = StreamId.of(IndexBenchmark.MODEL, "purged-pod");
    StreamId neighbour = StreamId.of(IndexBenchmark.MODEL, "neighbour-pod");
    log.info("purge: storing a {}-block pod", size);
    try (PrefixIndex index = indexes.apply(name)) {
      ApplyPump.run(
          index,
          List.of(
              feed(target, ChainFeed.Span.prefix(chain, size)),
              feed(neighbour, ChainFeed.Span.prefix(chain, size / 2))));
      Lease token = index.acquireLease(target, ApplyPump.OWNER, Duration.ofHours(2)).orElseThrow();
      int group = index.groupOf(target.model(), target.pod());
      long gcCalls = 0;
      long entriesRemoved = 0;
      long start;
      long end;
      CallCpu cpu = new CallCpu();
      CallNoise noise = new CallNoise();
      try (SlowLogWatch watch = SlowLogWatch.start(redis.admin())) {
        HostNoise noiseBefore = HostNoise.read(redis.admin(), redis.owned());
        start = System.nanoTime();
        cpu.before();
        noise.before();
        PurgeStatus status = index.purge(target, token, PurgeMode.RESET_WATERMARK);
        noise.after();
        cpu.after();
        noise.record(watch, -1);
        if (status != PurgeStatus.PURGED) {
          throw new IllegalStateException("purge returned " + status);
        }
        GcResult step;
        do {
          cpu.before();
          noise.before();
          step = index.collectGarbage(group, GC_BUDGET);
          noise.after();
          cpu.after();
          noise.record(watch, step.fieldsScanned());
          gcCalls++;
          entriesRemoved += step.entriesRemoved();
        } while (!step.done());
        watch.drain();
        end = System.nanoTime() - watch.drainNanos() - cpu.readNanos - noise.readNanos;
        HostNoise noiseAfter = HostNoise.read(redis.admin(), redis.owned());
        detail.put("max_command_us", watch.maxMicros());
        detail.put("max_command", watch.maxCommand());
        detail.put("max_below_log_threshold", watch.maxBelowThreshold());
        detail.set("max_us_by_command", Reports.MAPPER.valueToTree(watch.maxByCommand()));
        detail.put("commands_over_1ms", watch.overOneMillisecond());
        detail.set("slowest_commands", Reports.MAPPER.valueToTree(watch.slowest()));
        detail.set("host_noise", Reports.MAPPER.valueToTree(noiseAfter.since(noiseBefore)));
        detail.set("commandstats", Reports.MAPPER.valueToTree(watch.meanByCommand()));
        watch.loggedScripts().writeTo(detail.putObject("logged_script_calls"), "script");
        cpu.calls.writeTo(detail.putObject("call_cpu"), "cpu");
        detail.put("max_command_cpu_us", Math.round(cpu.calls.micros(100)));
        noise.writeTo(detail);
      }
      detail.put("cleanup_ms", LatencyRecorder.roundTenth((end - start) / 1e6));
      detail.put("gc_calls", gcCalls);
      detail.put("gc_entries_removed", entriesRemoved);
      detail.put("neighbour_depth_after", depthsAfter(index, chain, target, neighbour));
    } finally {
      if (redis.owned()) {
        redis.flushIfOwned();
      } else {
        redis.deleteKeys(KeySchema.keyPrefix(name));
      }
    }
  }

  /**
   * The Redis main thread's CPU time per purge or GC call (INFO cpu around each call, less what an
   * INFO itself adds: the least of twenty back-to-back pairs). Unlike wall time, it does not grow
   * when the machine takes the CPU away from Redis. It is an upper bound on the call's own work:
   * the window also holds what Redis does between commands, its cron and writing the replies
   * (kernel time, most of it waking the client on its CPU). Linux splits a thread's time into user
   * and kernel only by sampling at the scheduler tick, so the total is all that is precise. The
   * time spent reading is kept apart so that the cleanup time can leave it out.
   */
  private final class CallCpu {
    final LatencyRecorder calls = new LatencyRecorder();
    final long infoCost;
    long readNanos;
    private long before;

    CallCpu() {
      long least = Long.MAX_VALUE;
      for (int i = 0; i < 20; i++) {
        long first = HostNoise.mainThreadCpuMicros(redis.admin());
        least = Math.min(least, HostNoise.mainThreadCpuMicros(redis.admin()) - first);
      }
      infoCost = least;
    }

    void before() {
      long start = System.nanoTime();
      before = HostNoise.mainThreadCpuMicros(redis.admin());
      readNanos += System.nanoTime() - start;
    }

    void after() {
      long start = System.nanoTime();
      long used = HostNoise.mainThreadCpuMicros(redis.admin()) - before - infoCost;
      readNanos += System.nanoTime() - start;
      calls.recordNanos(Math.max(0, used) * 1000);
    }
  }

  /**
   * Per script call: its execution time (SLOWLOG, read after every call) and whether the kernel
   * took Redis's CPU away while it ran (its main thread's involuntary context switches, read from
   * /proc just before and just after the call, so Redis's idle time between calls is outside the
   * window). A call stretched past 1 ms while Redis was descheduled measures the machine; the
   * longest call during which Redis kept its CPU measures the script. Only for a server this
   * benchmark started (a user's server's threads are not visible here).
   */
  private final class CallNoise {
    private static final int LISTED = 20;
    private final long pid = redis.serverPid();
    long readNanos;
    private long before;
    private long after;
    private long[] schedBefore;
    private long[] schedAfter;
    private long callStart;
    private long calls;
    private long descheduled;
    private long overOneMillisecond;
    private long overOneMillisecondDescheduled;
    private long maxUndisturbed = -1;
    private long maxFieldsScanned = -1;
    private final List<Map<String, Object>> slowCalls = new ArrayList<>();

    void before() {
      long start = System.nanoTime();
      before = pid > 0 ? HostNoise.involuntarySwitches(pid) : -1;
      schedBefore = pid > 0 ? HostNoise.schedStatAsleep(pid) : null;
      callStart = System.nanoTime();
      readNanos += callStart - start;
    }

    void after() {
      long start = System.nanoTime();
      schedAfter = pid > 0 ? HostNoise.schedStatAsleep(pid) : null;
      after = pid > 0 ? HostNoise.involuntarySwitches(pid) : -1;
      readNanos += System.nanoTime() - start;
    }

    /**
     * Reads the call's time from the log (its cost lands in the watch's drain time); {@code
     * fieldsScanned} is what a GC call examined, -1 for the purge itself.
     */
    void record(SlowLogWatch watch, long fieldsScanned) {
      long micros = watch.drainCall();
      boolean known = before >= 0 && after >= 0;
      boolean moved = known && after > before;
      boolean timed = schedBefore != null && schedAfter != null;
      long ranMicros = timed ? (schedAfter[0] - schedBefore[0]) / 1000 : -1;
      calls++;
      maxFieldsScanned = Math.max(maxFieldsScanned, fieldsScanned);
      if (moved) {
        descheduled++;
      }
      if (micros >= SlowLogWatch.ONE_MILLISECOND_MICROS) {
        overOneMillisecond++;
        if (moved) {
          overOneMillisecondDescheduled++;
        }
        if (slowCalls.size() < LISTED) {
          Map<String, Object> call = new LinkedHashMap<>();
          call.put("call_us", micros);
          // CLOCK_MONOTONIC on Linux, as perf record -k mono and bpftrace see it.
          call.put("sent_monotonic_ns", callStart);
          call.put("descheduled", moved);
          if (fieldsScanned >= 0) {
            call.put("fields_scanned", fieldsScanned);
          }
          if (timed) {
            call.put("redis_ran_us", ranMicros);
            call.put("redis_waited_for_cpu_us", (schedAfter[1] - schedBefore[1]) / 1000);
          }
          slowCalls.add(call);
        }
      }
      // Undisturbed: no involuntary switch, and Redis ran at least as long as the call took over
      // the call's window (which also holds its reply writes), so no time provably went elsewhere.
      if (known && !moved && (!timed || ranMicros >= micros)) {
        maxUndisturbed = Math.max(maxUndisturbed, micros);
      }
    }

    void writeTo(ObjectNode detail) {
      ObjectNode out = detail.putObject("calls_descheduled");
      out.put("script_calls", calls);
      out.put("max_fields_scanned", maxFieldsScanned);
      if (maxUndisturbed < 0) {
        out.put("note", "not known: the server is not a process this benchmark started");
        return;
      }
      out.put("descheduled", descheduled);
      out.put("over_1ms", overOneMillisecond);
      out.put("over_1ms_descheduled", overOneMillisecondDescheduled);
      out.set("over_1ms_calls", Reports.MAPPER.valueToTree(slowCalls));
      detail.put("max_undisturbed_call_us", maxUndisturbed);
    }
  }

  private String memAllocator() {
    for (String line : redis.admin().info("memory").split("\\r?\\n")) {
      if (line.startsWith("mem_allocator:")) {
        return line.substring("mem_allocator:".length()).trim();
      }
    }
    return "unknown";
  }

  /** A sanity check recorded with the result: the purged pod must match 0 blocks. */
  private static String depthsAfter(
      PrefixIndex index, long[] chain, StreamId target, StreamId neighbour) {
    List<Long> keys = new ArrayList<>();
    for (int i = 0; i < Math.min(256, chain.length); i++) {
      keys.add(chain[i]);
    }
    LookupRequest request =
        LookupRequest.of(
            IndexBenchmark.MODEL, KeyMode.ENGINE, keys, List.of(target.pod(), neighbour.pod()));
    // A lookup has the router's 5 ms budget; on a busy machine one may run out and come back
    // without pods, so a few tries.
    LookupResult result = index.lookup(request);
    for (int attempt = 1; !result.complete() && attempt < 5; attempt++) {
      result = index.lookup(request);
    }
    if (!result.complete()) {
      return "not checked: 5 lookups ran past the router's 5 ms budget";
    }
    return "purged pod "
        + result.pods().get(target.pod()).depth()
        + ", neighbour "
        + result.pods().get(neighbour.pod()).depth()
        + " of "
        + keys.size();
  }

  private void naive(int size, ObjectNode detail) {
    String key = "kvindex-bench:" + runId + ":naive-purge";
    try (StatefulRedisConnection<byte[], byte[]> connection = redis.binaryConnection()) {
      Baselines.fillSet(connection, key, size);
      try (SlowLogWatch watch = SlowLogWatch.start(redis.admin())) {
        long start = System.nanoTime();
        long removed = Baselines.naivePurge(connection, key);
        long end = System.nanoTime();
        watch.drainNewest(10);
        detail.put("naive_max_command_us", watch.maxMicros());
        detail.set("naive_commandstats", Reports.MAPPER.valueToTree(watch.meanByCommand()));
        detail.put("naive_removed", removed);
        detail.put("naive_wall_ms", LatencyRecorder.roundTenth((end - start) / 1e6));
      }
    } finally {
      redis.admin().unlink(key);
    }
  }

  private ApplyPump.Feed feed(StreamId stream, ChainFeed.Span span) {
    return new ApplyPump.Feed(stream, new ChainFeed(List.of(span), sizes.fillBatchBlocks()));
  }
}
