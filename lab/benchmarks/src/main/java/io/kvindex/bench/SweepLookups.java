package io.kvindex.bench;

import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * One point of a lookup sweep: one client thread looks prompts up in turn on every index, one
 * lookup of each per iteration (the order rotating) and one PING, for a time budget but at least a
 * number of iterations; each index's latencies in its own recorder, and each PING also in the
 * recorder of the index whose lookup it followed. Not thread-safe.
 */
final class SweepLookups {
  /** Iterations run before the measured ones. */
  static final int WARMUP = 5;

  final List<LatencyRecorder> recorders = new ArrayList<>();
  final LatencyRecorder ping = new LatencyRecorder();

  /**
   * Per index, the PINGs that came right after its lookup: a baseline its own lookups'
   * after-effects (the client's garbage, Redis's output buffers) weigh on, and no other index's.
   */
  final List<LatencyRecorder> pingAfter = new ArrayList<>();

  long iterations;

  private SweepLookups() {}

  /**
   * Measures {@code indexes} on {@code prompts}, prompt {@code p} asking {@code candidates(p)};
   * PINGs on {@code connection}.
   */
  static SweepLookups measure(
      List<ComparedIndex> indexes,
      List<long[]> prompts,
      IntFunction<List<String>> candidates,
      Duration budget,
      int minIterations,
      StatefulRedisConnection<byte[], byte[]> connection) {
    SweepLookups out = new SweepLookups();
    indexes.forEach(
        i -> {
          out.recorders.add(new LatencyRecorder());
          out.pingAfter.add(new LatencyRecorder());
        });
    long deadline = Long.MAX_VALUE;
    for (int i = 0; i < WARMUP + minIterations || System.nanoTime() < deadline; i++) {
      if (i == WARMUP) {
        deadline = System.nanoTime() + budget.toNanos();
      }
      int p = i % prompts.size();
      List<String> pods = candidates.apply(p);
      int which = 0;
      for (int k = 0; k < indexes.size(); k++) {
        which = (i + k) % indexes.size();
        long start = System.nanoTime();
        indexes.get(which).depths(prompts.get(p), pods);
        long nanos = System.nanoTime() - start;
        if (i >= WARMUP) {
          out.recorders.get(which).recordNanos(nanos);
        }
      }
      long pingNanos = Baselines.pingOnce(connection);
      if (i >= WARMUP) {
        out.ping.recordNanos(pingNanos);
        out.pingAfter.get(which).recordNanos(pingNanos);
        out.iterations++;
      }
    }
    return out;
  }
}
