package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The sizes of one {@code bench index} run: the full run's are the issue's; the quick run's finish
 * in under a minute. Immutable.
 */
record IndexSizes(
    long lookupEntries,
    int pods,
    int promptBlocks,
    int lookupWarmup,
    int lookupIterations,
    List<Integer> purgePodSizes,
    long memoryEntries,
    int applyBlocks,
    int applyBatchBlocks,
    int fillBatchBlocks) {

  static final IndexSizes FULL =
      new IndexSizes(
          1_000_000,
          64,
          256,
          5_000,
          20_000,
          List.of(10_000, 100_000, 1_000_000),
          1_000_000,
          256_000,
          32,
          64);

  static final IndexSizes QUICK =
      new IndexSizes(
          100_000, 64, 256, 1_000, 2_000, List.of(10_000, 100_000), 100_000, 32_000, 32, 64);

  static IndexSizes of(BenchOptions options) {
    return options.quick() ? QUICK : FULL;
  }

  void describe(ObjectNode json) {
    json.put("lookup_min_entries", lookupEntries);
    json.put("pods", pods);
    json.put("prompt_blocks", promptBlocks);
    json.put("lookup_warmup", lookupWarmup);
    json.put("lookup_iterations", lookupIterations);
    json.set("purge_pod_sizes", Reports.MAPPER.valueToTree(purgePodSizes));
    json.put("memory_min_entries", memoryEntries);
    json.put("apply_blocks", applyBlocks);
    json.put("apply_batch_blocks", applyBatchBlocks);
    json.put("fill_batch_blocks", fillBatchBlocks);
  }
}
