package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Closed-loop load: {@code threads} client threads call one operation back to back for a warm-up,
 * then for the measured duration; each call's latency goes to the thread's own histogram, merged at
 * the end, with the CPU this process spent per call. Not thread-safe (one run at a time); the
 * operation must be.
 */
final class LoadRun {
  /** One call; returns false if it answered "unavailable" (counted, and timed like the rest). */
  @FunctionalInterface
  interface Operation {
    boolean call(int thread, long iteration);
  }

  private LoadRun() {}

  /** Runs the load and writes {@code lookups_per_s}, latency percentiles and counts. */
  static void measure(
      Operation operation, int threads, Duration warmup, Duration measured, ObjectNode json) {
    run(operation, threads, warmup, null);
    LatencyRecorder merged = new LatencyRecorder();
    AtomicLong unavailable = new AtomicLong();
    long cpuStart = processCpuNanos();
    long start = System.nanoTime();
    List<LatencyRecorder> recorders = run(operation, threads, measured, unavailable);
    long nanos = System.nanoTime() - start;
    long cpuNanos = processCpuNanos() - cpuStart;
    recorders.forEach(merged::add);
    json.put("threads", threads);
    json.put("lookups_per_s", Reports.perSecond(merged.count(), nanos));
    json.put("p50_us", merged.micros(50));
    json.put("p90_us", merged.micros(90));
    json.put("p99_us", merged.micros(99));
    json.put("p999_us", merged.micros(99.9));
    json.put("max_us", merged.maxMicros());
    json.put("lookups", merged.count());
    json.put("unavailable", unavailable.get());
    if (cpuStart >= 0 && merged.count() > 0) {
      // This JVM only (the clients, lettuce, GC; not Redis, which runs in its own process).
      json.put(
          "client_cpu_us_per_lookup", LatencyRecorder.roundTenth(cpuNanos / 1e3 / merged.count()));
    }
    json.put("measured_s", LatencyRecorder.roundTenth(nanos / 1e9));
  }

  private static List<LatencyRecorder> run(
      Operation operation, int threads, Duration duration, AtomicLong unavailable) {
    long deadline = System.nanoTime() + duration.toNanos();
    List<LatencyRecorder> recorders = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    for (int t = 0; t < threads; t++) {
      LatencyRecorder recorder = new LatencyRecorder();
      recorders.add(recorder);
      int thread = t;
      Thread worker =
          new Thread(
              () -> {
                try {
                  for (long i = 0; System.nanoTime() < deadline; i++) {
                    long begin = System.nanoTime();
                    boolean available = operation.call(thread, i);
                    recorder.recordNanos(System.nanoTime() - begin);
                    if (!available && unavailable != null) {
                      unavailable.incrementAndGet();
                    }
                  }
                } catch (RuntimeException | Error e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kvindex-bench-client-" + t);
      workers.add(worker);
    }
    workers.forEach(Thread::start);
    for (Thread worker : workers) {
      try {
        worker.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while the load ran", e);
      }
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a client thread failed: " + failure.get(), failure.get());
    }
    return recorders;
  }

  /** CPU time this JVM has used, all threads, or -1 where the platform does not say. */
  private static long processCpuNanos() {
    return ManagementFactory.getOperatingSystemMXBean()
            instanceof com.sun.management.OperatingSystemMXBean os
        ? os.getProcessCpuTime()
        : -1;
  }
}
