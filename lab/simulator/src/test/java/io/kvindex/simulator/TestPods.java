package io.kvindex.simulator;

import java.util.Random;

/** Small helpers for simulator tests. */
public final class TestPods {
  private TestPods() {}

  public static PodConfig.Builder config() {
    return PodConfig.builder().http(false);
  }

  static DefaultSimulatedPod start(PodConfig config) {
    return (DefaultSimulatedPod) SimulatedPod.start(config);
  }

  public static int[] tokens(long seed, int n) {
    Random r = new Random(seed);
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = r.nextInt(32_000);
    }
    return out;
  }

  public static InferenceRequest request(long seed, int promptTokens, int outputTokens) {
    return InferenceRequest.of(tokens(seed, promptTokens), tokens(~seed, outputTokens));
  }
}
