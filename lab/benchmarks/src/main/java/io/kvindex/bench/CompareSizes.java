package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;

/**
 * The sizes of one {@code bench compare} run: the full run's, and the quick run's, which finish in
 * under a minute. Immutable.
 *
 * @param entries (block, pod) entries of the workload every index holds
 * @param pods pods of the workload, all of them candidates of every lookup
 * @param promptBlocks blocks of every prompt
 * @param batchBlocks blocks per BlockStored batch when storing
 * @param verifyPrompts prompts whose depths are checked on every index
 * @param interleavedIterations measured iterations of the interleaved one-thread series
 * @param warmup closed-loop warm-up per index and thread count
 * @param measured closed-loop measured time per index and thread count
 * @param clearSizes blocks of the pods cleared
 */
record CompareSizes(
    long entries,
    int pods,
    int promptBlocks,
    int batchBlocks,
    int verifyPrompts,
    int interleavedIterations,
    Duration warmup,
    Duration measured,
    List<Integer> clearSizes) {

  static final CompareSizes FULL =
      new CompareSizes(
          1_000_000,
          64,
          256,
          32,
          1_000,
          3_000,
          Duration.ofSeconds(2),
          Duration.ofSeconds(8),
          List.of(10_000, 100_000, 1_000_000));

  static final CompareSizes QUICK =
      new CompareSizes(
          100_000,
          64,
          256,
          32,
          40,
          200,
          Duration.ofMillis(300),
          Duration.ofMillis(1200),
          List.of(10_000));

  static CompareSizes of(BenchOptions options) {
    return options.quick() ? QUICK : FULL;
  }

  void describe(ObjectNode json) {
    json.put("min_entries", entries);
    json.put("pods", pods);
    json.put("candidates", pods);
    json.put("prompt_blocks", promptBlocks);
    json.put("batch_blocks", batchBlocks);
    json.put("interleaved_iterations", interleavedIterations);
    json.put("warmup_s", warmup.toMillis() / 1000.0);
    json.put("measured_s", measured.toMillis() / 1000.0);
    json.set("clear_pod_blocks", Reports.MAPPER.valueToTree(clearSizes));
  }
}
