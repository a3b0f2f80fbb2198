package io.kvindex.simulator;

import java.nio.charset.StandardCharsets;
import java.util.Random;

/** Small helpers for simulator tests. */
final class TestPods {
  private TestPods() {}

  /** A placeholder payload encoder until the common encoder is used: the batch's text. */
  static final PayloadEncoder TEXT = batch -> batch.toString().getBytes(StandardCharsets.UTF_8);

  static PodConfig.Builder config() {
    return PodConfig.builder().encoder(TEXT).http(false);
  }

  static DefaultSimulatedPod start(PodConfig config) {
    return (DefaultSimulatedPod) SimulatedPod.start(config);
  }

  static int[] tokens(long seed, int n) {
    Random r = new Random(seed);
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = r.nextInt(32_000);
    }
    return out;
  }

  static InferenceRequest request(long seed, int promptTokens, int outputTokens) {
    return InferenceRequest.of(tokens(seed, promptTokens), tokens(~seed, outputTokens));
  }
}
