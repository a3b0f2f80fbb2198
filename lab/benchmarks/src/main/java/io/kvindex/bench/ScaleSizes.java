package io.kvindex.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;

/**
 * The sizes of one {@code bench scale} run: the full run's, and the quick run's, which finish in
 * under a minute. Immutable.
 *
 * @param promptLengths prompt lengths (blocks) of the prompt-length sweep
 * @param promptMinEntries least entries of each prompt-length point's index
 * @param pointBudget how long one lookup point measures at most (at least {@code minLookups})
 * @param minLookups lookups each point measures at least
 * @param candidates candidate counts of the candidate sweep (its index has the largest many pods)
 * @param candidateEntries entries of the candidate sweep's index
 * @param indexSizes entries of the index-size sweep's points (the sweep stops early if memory runs
 *     short)
 * @param groups index groups of the cluster sweep
 * @param clusterEntries entries of each cluster point's index
 * @param clusterMeasured closed-loop time of each cluster point (after a warm-up of a quarter)
 * @param offeredBlocksPerSecond offered loads of the ingest sweep, rising
 * @param ingestStep how long each offered load runs
 */
record ScaleSizes(
    List<Integer> promptLengths,
    long promptMinEntries,
    Duration pointBudget,
    int minLookups,
    List<Integer> candidates,
    long candidateEntries,
    List<Long> indexSizes,
    List<Integer> groups,
    long clusterEntries,
    Duration clusterMeasured,
    List<Integer> offeredBlocksPerSecond,
    Duration ingestStep) {

  static final ScaleSizes FULL =
      new ScaleSizes(
          List.of(16, 64, 256, 1024, 4096, 8192),
          200_000,
          Duration.ofSeconds(5),
          50,
          List.of(8, 32, 128, 512, 1024),
          1_000_000,
          List.of(1_000_000L, 3_000_000L, 10_000_000L, 30_000_000L, 100_000_000L),
          List.of(1, 2, 4, 8, 16),
          500_000,
          Duration.ofSeconds(6),
          List.of(
              5_000, 10_000, 20_000, 40_000, 60_000, 80_000, 100_000, 130_000, 160_000, 200_000),
          Duration.ofSeconds(6));

  static final ScaleSizes QUICK =
      new ScaleSizes(
          List.of(16, 256, 1024),
          20_000,
          Duration.ofMillis(400),
          10,
          List.of(8, 64, 256),
          30_000,
          List.of(100_000L, 300_000L),
          List.of(1, 4),
          20_000,
          Duration.ofMillis(800),
          List.of(5_000, 20_000),
          Duration.ofSeconds(2));

  static ScaleSizes of(BenchOptions options) {
    return options.quick() ? QUICK : FULL;
  }

  void describe(ObjectNode json) {
    json.set("prompt_lengths", Reports.MAPPER.valueToTree(promptLengths));
    json.put("prompt_min_entries", promptMinEntries);
    json.put("point_budget_s", pointBudget.toMillis() / 1000.0);
    json.put("min_lookups_per_point", minLookups);
    json.set("candidates", Reports.MAPPER.valueToTree(candidates));
    json.put("candidate_entries", candidateEntries);
    json.set("index_sizes", Reports.MAPPER.valueToTree(indexSizes));
    json.set("groups", Reports.MAPPER.valueToTree(groups));
    json.put("cluster_entries", clusterEntries);
    json.put("cluster_measured_s", clusterMeasured.toMillis() / 1000.0);
    json.set("offered_blocks_per_s", Reports.MAPPER.valueToTree(offeredBlocksPerSecond));
    json.put("ingest_step_s", ingestStep.toMillis() / 1000.0);
  }
}
