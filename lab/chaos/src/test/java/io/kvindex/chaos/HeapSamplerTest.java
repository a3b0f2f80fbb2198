package io.kvindex.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class HeapSamplerTest {
  private static final String PAGE =
      """
      # HELP jvm_memory_used_bytes The amount of used memory
      # TYPE jvm_memory_used_bytes gauge
      jvm_memory_used_bytes{area="heap",id="G1 Eden Space"} 1.2E7
      jvm_memory_used_bytes{area="heap",id="G1 Old Gen"} 3.0E7
      jvm_memory_used_bytes{area="nonheap",id="Metaspace"} 5.0E7
      jvm_memory_usage_after_gc{area="heap",pool="long-lived"} 0.25
      jvm_gc_max_data_size_bytes 1.34217728E8
      kvindex_ingester_memory_used_bytes{use="live"} 1000.0
      kvindex_ingester_memory_used_bytes{use="replay"} 2000.0
      kvindex_ingester_memory_budget_bytes 3.3554432E7
      """;

  @Test
  void parse_prometheusPage() {
    Map<String, Double> series = HeapSampler.parse(PAGE);

    assertThat(series).hasSize(8);
    assertThat(series).containsEntry("jvm_gc_max_data_size_bytes", 134_217_728.0);
    assertThat(series).containsEntry("kvindex_ingester_memory_used_bytes{use=\"replay\"}", 2000.0);
  }

  @Test
  void sum_byNameAndLabel() {
    Map<String, Double> series = HeapSampler.parse(PAGE);

    assertThat(HeapSampler.sum(series, "jvm_memory_used_bytes", "area=\"heap\""))
        .isEqualTo(42_000_000.0);
    assertThat(HeapSampler.sum(series, "kvindex_ingester_memory_used_bytes", null))
        .isEqualTo(3000.0);
    assertThat(HeapSampler.sum(series, "kvindex_ingester_memory", null))
        .as("a name is matched whole, not as a prefix")
        .isZero();
  }

  @Test
  void everyRun_leavesOutTheScenariosRunOnlyByName() {
    assertThat(ChaosScenario.everyRun())
        .doesNotContain(ChaosScenario.RING_REBUILD_HEAP_CAPPED)
        .hasSize(ChaosScenario.values().length - ChaosScenario.ONLY_WHEN_NAMED.size());
    assertThat(ChaosScenario.named("ring-rebuild-heap-capped"))
        .isEqualTo(ChaosScenario.RING_REBUILD_HEAP_CAPPED);
    assertThat(ChaosScenario.quickOnes()).doesNotContain(ChaosScenario.RING_REBUILD_HEAP_CAPPED);
  }
}
