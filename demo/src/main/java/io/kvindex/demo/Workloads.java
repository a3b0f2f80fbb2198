package io.kvindex.demo;

import io.kvindex.simulator.InferenceRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The requests of a run: the built-in multi-tenant workload or a Mooncake-format trace. The same
 * list is replayed under every routing policy. Thread-safe (stateless).
 */
final class Workloads {
  static final String MODEL = "sim-model";
  static final int BLOCK_SIZE = 16;

  private Workloads() {}

  /** The run's requests, in arrival order. */
  static List<InferenceRequest> requests(DemoConfig config) {
    return multiTenant(config.requestCount(), config.seed());
  }

  /**
   * Tenants with their own system prompt, chosen by a Zipf popularity; each request continues one
   * of the tenant's conversations (its earlier turns, prompt and answer, are the prefix) or starts
   * a new one.
   */
  static List<InferenceRequest> multiTenant(int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int tenants = 16;
    int[][] systemPrompts = new int[tenants][];
    for (int t = 0; t < tenants; t++) {
      systemPrompts[t] = tokens(random, 800 + random.nextInt(1600));
    }
    double[] cumulative = zipf(tenants, 1.0);
    List<List<int[]>> conversations = new ArrayList<>();
    for (int t = 0; t < tenants; t++) {
      conversations.add(new ArrayList<>());
    }
    List<InferenceRequest> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      int tenant = pick(cumulative, random.nextDouble());
      List<int[]> open = conversations.get(tenant);
      int[] history;
      if (open.isEmpty() || open.size() < 4 && random.nextDouble() < 0.3) {
        history = systemPrompts[tenant];
        open.add(history);
      } else {
        history = open.get(random.nextInt(open.size()));
      }
      int[] prompt = concat(history, tokens(random, 40 + random.nextInt(200)));
      int[] output = tokens(random, 20 + random.nextInt(150));
      int slot = open.indexOf(history);
      int[] next = concat(prompt, output);
      if (next.length > 6000) {
        open.remove(slot);
      } else {
        open.set(slot, next);
      }
      out.add(InferenceRequest.of(prompt, output));
    }
    return out;
  }

  private static int[] tokens(SplittableRandom random, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = random.nextInt(32_000);
    }
    return t;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static double[] zipf(int n, double s) {
    double[] c = new double[n];
    double sum = 0;
    for (int k = 0; k < n; k++) {
      sum += 1 / Math.pow(k + 1, s);
      c[k] = sum;
    }
    for (int k = 0; k < n; k++) {
      c[k] /= sum;
    }
    return c;
  }

  private static int pick(double[] cumulative, double u) {
    for (int k = 0; k < cumulative.length; k++) {
      if (u <= cumulative[k]) {
        return k;
      }
    }
    return cumulative.length - 1;
  }
}
