package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.common.Threads;
import io.kvindex.index.StreamId;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The clear phase of {@code bench compare}: per pod size, a pod holding one chain of N blocks (and
 * a neighbour holding its first N/2, so shared entries must be edited, not only deleted) is added
 * to every index beside the workload, then cleared while an observer thread looks the chain's first
 * blocks up every millisecond. Measured: the longest Redis command of the clear (SLOWLOG), the
 * clear's wall time, and whether any lookup saw part of it (a depth neither all nor none of the
 * prefix): the clear is atomic only if none did. Not thread-safe.
 */
final class CompareClears {
  private static final Logger log = LoggerFactory.getLogger(CompareClears.class);
  private static final int PROBE_BLOCKS = 256;
  private static final Duration OBSERVER_PACE = Duration.ofMillis(1);

  private final BenchRedis redis;

  CompareClears(BenchRedis redis) {
    this.redis = redis;
  }

  /** Clears a pod of each size from each index; writes figures and details per index. */
  void run(List<ComparedIndex> indexes, List<Integer> sizes, ObjectNode figures, ObjectNode out) {
    try (CpuPlacement placement = redis.ownCpu()) {
      out.put("cpu_placement", placement.description());
      for (int size : sizes) {
        for (ComparedIndex index : indexes) {
          log.info("compare: clearing a {}-block pod from {}", size, index.name());
          ObjectNode detail = Reports.child(out, index.name()).putObject(Integer.toString(size));
          clearOne(index, size, detail);
          ObjectNode fig = Reports.child(figures, index.name());
          if (!(index instanceof InProcessIndex)) {
            Reports.child(fig, "clear_max_command_us")
                .put(Integer.toString(size), detail.path("max_command_us").asLong());
          }
          Reports.child(fig, "clear_ms")
              .put(Integer.toString(size), detail.path("clear_ms").asDouble());
          Reports.child(fig, "clear_atomic")
              .put(Integer.toString(size), detail.path("atomic").asBoolean());
        }
      }
    }
  }

  private void clearOne(ComparedIndex index, int size, ObjectNode detail) {
    long[] chain = LookupFixture.randomChain(new Random(size * 31L), size);
    String target = "cleared-pod-" + size;
    String neighbour = "neighbour-pod-" + size;
    index.store(
        List.of(
            feed(target, ChainFeed.Span.prefix(chain, size)),
            feed(neighbour, ChainFeed.Span.prefix(chain, size / 2))));
    long[] probe = Arrays.copyOf(chain, Math.min(PROBE_BLOCKS, size / 2));
    boolean onRedis = !(index instanceof InProcessIndex);
    detail.put("keyspace_before", onRedis ? keyspace() : "none (in the JVM)");
    Observer observer = new Observer(index, probe, List.of(target, neighbour));
    observer.check(detail, "before");
    HostNoise noiseBefore = HostNoise.read(redis.admin(), redis.owned());
    long nanos;
    if (onRedis) {
      try (SlowLogWatch watch = SlowLogWatch.start(redis.admin())) {
        nanos = observed(index, target, observer, watch::drain);
        watch.drain();
        nanos -= watch.drainNanos();
        detail.put("max_command_us", watch.maxMicros());
        detail.put("max_command", watch.maxCommand());
        detail.set("max_us_by_command", Reports.MAPPER.valueToTree(watch.maxByCommand()));
        detail.put("commands_over_1ms", watch.overOneMillisecond());
        detail.set("slowest_commands", Reports.MAPPER.valueToTree(watch.slowest()));
        detail.set("commandstats", Reports.MAPPER.valueToTree(watch.meanByCommand()));
      }
    } else {
      nanos = observed(index, target, observer, () -> {});
    }
    detail.set(
        "host_noise",
        Reports.MAPPER.valueToTree(
            HostNoise.read(redis.admin(), redis.owned()).since(noiseBefore)));
    detail.put("clear_ms", LatencyRecorder.roundTenth(nanos / 1e6));
    observer.writeTo(detail);
    observer.check(detail, "after");
  }

  /** Runs the clear with the observer looking up meanwhile; returns the clear's nanoseconds. */
  private static long observed(ComparedIndex index, String pod, Observer observer, Runnable step) {
    Thread thread = Threads.daemon("kvindex-bench-clear-observer", observer);
    thread.start();
    observer.awaitFirst();
    long start = System.nanoTime();
    try {
      index.clear(pod, step);
      return System.nanoTime() - start;
    } finally {
      observer.stop();
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while the observer stopped", e);
      }
    }
  }

  private String keyspace() {
    return redis.admin().info("keyspace").replaceAll("\\s+", " ").trim();
  }

  private static ApplyPump.Feed feed(String pod, ChainFeed.Span span) {
    return new ApplyPump.Feed(
        StreamId.of(IndexBenchmark.MODEL, pod), new ChainFeed(List.of(span), 64));
  }

  /**
   * Looks the probe up every {@link #OBSERVER_PACE} until stopped, counting what it saw of the
   * cleared pod: all of the probe, none of it, or part of it.
   */
  private static final class Observer implements Runnable {
    private final ComparedIndex index;
    private final long[] probe;
    private final List<String> candidates;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong lookups = new AtomicLong();
    private final AtomicLong whole = new AtomicLong();
    private final AtomicLong none = new AtomicLong();
    private final AtomicLong partial = new AtomicLong();
    private final AtomicLong neighbourShort = new AtomicLong();
    private final LatencyRecorder latency = new LatencyRecorder();
    private volatile int firstPartial = -1;

    Observer(ComparedIndex index, long[] probe, List<String> candidates) {
      this.index = index;
      this.probe = probe;
      this.candidates = candidates;
    }

    @Override
    public void run() {
      while (running.get()) {
        long start = System.nanoTime();
        int[] depths = index.depths(probe, candidates);
        latency.recordNanos(System.nanoTime() - start);
        if (depths[0] == probe.length) {
          whole.incrementAndGet();
        } else if (depths[0] == 0) {
          none.incrementAndGet();
        } else {
          if (firstPartial < 0) {
            firstPartial = depths[0];
          }
          partial.incrementAndGet();
        }
        if (depths[1] != probe.length) {
          neighbourShort.incrementAndGet();
        }
        lookups.incrementAndGet();
        LockSupport.parkNanos(OBSERVER_PACE.toNanos());
      }
    }

    /** Waits until the observer has looked up once (so it watches the whole clear). */
    void awaitFirst() {
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (lookups.get() == 0 && System.nanoTime() < deadline) {
        LockSupport.parkNanos(Duration.ofMillis(1).toNanos());
      }
    }

    void stop() {
      running.set(false);
    }

    /** Records the cleared pod's and the neighbour's depth now, outside the clear. */
    void check(ObjectNode detail, String when) {
      int[] depths = index.depths(probe, candidates);
      detail.put(
          "depths_" + when,
          "cleared pod " + depths[0] + ", neighbour " + depths[1] + " of " + probe.length);
    }

    void writeTo(ObjectNode detail) {
      ObjectNode out = detail.putObject("observer");
      out.put("probe_blocks", probe.length);
      out.put("lookups", lookups.get());
      out.put("saw_all", whole.get());
      out.put("saw_none", none.get());
      out.put("saw_part", partial.get());
      out.put("first_part_depth", firstPartial);
      out.put("neighbour_short", neighbourShort.get());
      latency.writeTo(out, "lookup");
      out.put(
          "how",
          "one thread looks the cleared pod's first "
              + probe.length
              + " blocks up (candidates: it and its neighbour) every "
              + OBSERVER_PACE.toMillis()
              + " ms from before the clear starts until it returns; saw_part counts lookups that"
              + " matched some but not all of them");
      detail.put("atomic", partial.get() == 0);
    }
  }
}
