package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.router.KvRouter;
import java.time.Duration;
import java.util.List;

/**
 * Block hashing alone ({@link KvRouter#blockKeys}, sha256_cbor over each prompt) on one thread,
 * measured once, and the cores it takes at a given rate of scores. Not thread-safe.
 */
final class HashingCost {
  /** Mean µs to hash one prompt, once measured. */
  private double meanMicros;

  /** Whether {@link #measure} has run. */
  boolean measured() {
    return meanMicros != 0;
  }

  /** Hashes the prompts in turn for {@code time}, and writes the latencies to {@code json}. */
  void measure(ObjectNode json, KvRouter router, List<int[]> prompts, Duration time) {
    LatencyRecorder recorder = new LatencyRecorder();
    long deadline = System.nanoTime() + time.toNanos();
    for (int i = 0; System.nanoTime() < deadline; i++) {
      long begin = System.nanoTime();
      router.blockKeys(IndexBenchmark.MODEL, null, null, prompts.get(i % prompts.size()));
      recorder.recordNanos(System.nanoTime() - begin);
    }
    json.put("threads", 1);
    json.put("prompt_tokens", prompts.get(0).length);
    json.put("hashes", recorder.count());
    json.put("mean_us", recorder.meanMicros());
    json.put("p50_us", recorder.micros(50));
    json.put("p99_us", recorder.micros(99));
    meanMicros = recorder.meanMicros();
    json.put("cores_per_10k_scores_per_s", cores(10_000));
  }

  /** The cores block hashing alone takes at {@code scoresPerSecond} (mean µs × rate). */
  double cores(double scoresPerSecond) {
    return Math.round(meanMicros * scoresPerSecond / 1e4) / 100.0;
  }
}
