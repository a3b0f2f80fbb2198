package io.kvindex.ingester.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.ingester.stream.EngineCapacity;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EngineMetricsTest {
  private static String page(int engine, double awake, double offloaded, double discard) {
    String labels = "engine=\"" + engine + "\",model_name=\"m\",";
    return "# HELP vllm:engine_sleep_state Engine sleep state\n"
        + "# TYPE vllm:engine_sleep_state gauge\n"
        + "vllm:engine_sleep_state{"
        + labels
        + "sleep_state=\"awake\"} "
        + awake
        + "\n"
        + "vllm:engine_sleep_state{"
        + labels
        + "sleep_state=\"weights_offloaded\"} "
        + offloaded
        + "\n"
        + "vllm:engine_sleep_state{"
        + labels
        + "sleep_state=\"discard_all\"} "
        + discard
        + "\n";
  }

  @Test
  void asleepByEngine_awake() {
    assertThat(EngineMetrics.asleepByEngine(page(0, 1, 0, 0))).isEqualTo(Map.of(0, false));
  }

  @Test
  void asleepByEngine_levelOneAndTwoAreAsleep() {
    assertThat(EngineMetrics.asleepByEngine(page(0, 0, 1, 0))).isEqualTo(Map.of(0, true));
    assertThat(EngineMetrics.asleepByEngine(page(1, 0, 0, 1))).isEqualTo(Map.of(1, true));
  }

  @Test
  void asleepByEngine_schedulerPauseIsNotSleep() {
    assertThat(EngineMetrics.asleepByEngine(page(0, 0, 0, 0))).isEqualTo(Map.of(0, false));
  }

  @Test
  void asleepByEngine_severalEnginesAndOtherMetrics() {
    String text =
        "vllm:num_requests_running{engine=\"0\"} 3.0\n" + page(0, 1, 0, 0) + page(1, 0, 1, 0);
    assertThat(EngineMetrics.asleepByEngine(text)).isEqualTo(Map.of(0, false, 1, true));
  }

  @Test
  void processStart_readsTheGaugeAsWritten() {
    String text = page(0, 1, 0, 0) + "process_start_time_seconds 1732912345.67\n";
    assertThat(EngineMetrics.processStart(text)).isEqualTo("1732912345.67");
    assertThat(EngineMetrics.processStart("up 1\n")).isNull();
  }

  @Test
  void asleepByEngine_noSeries() {
    assertThat(EngineMetrics.asleepByEngine("up 1\n")).isEmpty();
  }

  /** vLLM's info gauge: every CacheConfig field a label, one series per engine. */
  private static String cacheConfig(String engine, String blocks) {
    return "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        + "# TYPE vllm:cache_config_info gauge\n"
        + "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching="
        + "\"True\",engine=\""
        + engine
        + "\",kv_offloading=\"{'a': \\\"}\\\"}\",num_cpu_blocks=\"None\",num_gpu_blocks=\""
        + blocks
        + "\",prefix_caching_hash_algo=\"sha256_cbor\"} 1.0\n";
  }

  @Test
  void capacityByEngine_readsNumGpuBlocksPerEngine() {
    String text =
        page(0, 1, 0, 0) + cacheConfig("0", "27264") + cacheConfig("1", "27000") + "up 1\n";
    assertThat(EngineMetrics.capacityByEngine(text))
        .isEqualTo(
            Map.of(
                0, new EngineCapacity(27264, 16, 0),
                1, new EngineCapacity(27000, 16, 0)));
  }

  @Test
  void capacityByEngine_unknownWhenAbsentOrNotANumber() {
    assertThat(EngineMetrics.capacityByEngine(page(0, 1, 0, 0))).isEmpty();
    assertThat(EngineMetrics.capacityByEngine(cacheConfig("0", "None"))).isEmpty();
    assertThat(EngineMetrics.capacityByEngine(cacheConfig("0", "0"))).isEmpty();
  }

  @Test
  void capacityByEngine_readsKvCacheSizeTokens() {
    String text =
        cacheConfig("0", "2168")
            .replace(
                "num_gpu_blocks=\"2168\",",
                "num_gpu_blocks=\"2168\",kv_cache_size_tokens=\"27967\",");
    assertThat(EngineMetrics.capacityByEngine(text))
        .isEqualTo(Map.of(0, new EngineCapacity(2168, 16, 27967)));
  }
}
