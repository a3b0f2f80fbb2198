package io.kvindex.ingester.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SleepStateTest {
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
    assertThat(SleepState.asleepByEngine(page(0, 1, 0, 0))).isEqualTo(Map.of(0, false));
  }

  @Test
  void asleepByEngine_levelOneAndTwoAreAsleep() {
    assertThat(SleepState.asleepByEngine(page(0, 0, 1, 0))).isEqualTo(Map.of(0, true));
    assertThat(SleepState.asleepByEngine(page(1, 0, 0, 1))).isEqualTo(Map.of(1, true));
  }

  @Test
  void asleepByEngine_schedulerPauseIsNotSleep() {
    assertThat(SleepState.asleepByEngine(page(0, 0, 0, 0))).isEqualTo(Map.of(0, false));
  }

  @Test
  void asleepByEngine_severalEnginesAndOtherMetrics() {
    String text =
        "vllm:num_requests_running{engine=\"0\"} 3.0\n" + page(0, 1, 0, 0) + page(1, 0, 1, 0);
    assertThat(SleepState.asleepByEngine(text)).isEqualTo(Map.of(0, false, 1, true));
  }

  @Test
  void processStart_readsTheGaugeAsWritten() {
    String text = page(0, 1, 0, 0) + "process_start_time_seconds 1732912345.67\n";
    assertThat(SleepState.processStart(text)).isEqualTo("1732912345.67");
    assertThat(SleepState.processStart("up 1\n")).isNull();
  }

  @Test
  void asleepByEngine_noSeries() {
    assertThat(SleepState.asleepByEngine("up 1\n")).isEmpty();
  }
}
