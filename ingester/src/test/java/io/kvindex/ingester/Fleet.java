package io.kvindex.ingester;

import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Simulated pods for ingester tests, with a seeded workload of shared prefixes, and every block
 * hash any pod ever held (so tests can check the index holds nothing it should not). Not
 * thread-safe.
 */
public final class Fleet implements AutoCloseable {
  public static final String MODEL = "sim-model";
  static final int BLOCK = 16;

  private final List<SimulatedPod> pods = new ArrayList<>();
  private final Set<Long> everHeld = new HashSet<>();
  private final Random random;
  private final int[][] prefixes;

  private Fleet(long seed) {
    random = new Random(seed);
    prefixes = new int[6][];
    for (int i = 0; i < prefixes.length; i++) {
      prefixes[i] = tokens(BLOCK * (2 + random.nextInt(4)));
    }
  }

  /** Starts {@code n} pods named {@code pod-0..}, each configured by {@code customize}. */
  public static Fleet start(int n, long seed, UnaryOperator<PodConfig.Builder> customize) {
    Fleet f = new Fleet(seed);
    try {
      for (int i = 0; i < n; i++) {
        PodConfig.Builder b =
            PodConfig.builder().name("pod-" + i).model(MODEL).blockSize(BLOCK).capacityBlocks(96);
        f.pods.add(SimulatedPod.start(customize.apply(b).build()));
      }
      return f;
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
  }

  public static Fleet start(int n) {
    return start(n, 42, b -> b);
  }

  /**
   * Replaces pod {@code i} by a new process on the same endpoints, as a restarted vLLM pod would
   * come back: empty cache, sequence numbers from 0, its sockets gone for a while.
   */
  SimulatedPod replace(int i) {
    SimulatedPod old = pods.get(i);
    StreamEndpoints e = old.endpoints().get(0);
    PodConfig config =
        old.config().toBuilder().publishBind(e.publish()).replayBind(e.replay()).build();
    old.close();
    SimulatedPod fresh = SimulatedPod.start(config);
    pods.set(i, fresh);
    return fresh;
  }

  List<SimulatedPod> pods() {
    return pods;
  }

  public SimulatedPod pod(int i) {
    return pods.get(i);
  }

  /** The spec discovery would give for a pod (all its ranks), in a key mode. */
  static PodSpec spec(SimulatedPod pod, String keyMode) {
    StreamEndpoints e = pod.endpoints().get(0);
    String metrics = pod.httpAddress() == null ? null : pod.httpAddress() + "/metrics";
    List<Integer> ranks = pod.endpoints().stream().map(StreamEndpoints::rank).toList();
    return new PodSpec(
        pod.name(),
        pod.model(),
        e.publish(),
        !e.publishBound(),
        e.replay(),
        metrics,
        ranks,
        PodSpec.keyMode(keyMode),
        e.topic());
  }

  List<PodSpec> specs(String keyMode) {
    return pods.stream().map(p -> spec(p, keyMode)).toList();
  }

  /** Serves {@code n} requests on a pod's rank 0. */
  public void traffic(SimulatedPod pod, int n) {
    traffic(pod, n, 0);
  }

  /** Serves {@code n} requests on a rank: a shared prefix, a random suffix, a short output. */
  public void traffic(SimulatedPod pod, int n, int rank) {
    for (int i = 0; i < n; i++) {
      serve(pod, rank, nextRequest());
    }
  }

  /** The next request of the workload: a shared prefix, a random suffix, a short output. */
  InferenceRequest nextRequest() {
    int[] prefix = prefixes[random.nextInt(prefixes.length)];
    int[] suffix = tokens(BLOCK * random.nextInt(3) + random.nextInt(BLOCK));
    int[] prompt = new int[prefix.length + suffix.length];
    System.arraycopy(prefix, 0, prompt, 0, prefix.length);
    System.arraycopy(suffix, 0, prompt, prefix.length, suffix.length);
    return InferenceRequest.of(prompt, tokens(1 + random.nextInt(BLOCK)));
  }

  /** Serves one request on a rank, noting what the pod then holds. */
  Completion serve(SimulatedPod pod, int rank, InferenceRequest request) {
    Completion done = pod.submit(request, rank);
    everHeld.addAll(pod.cachedBlocks(rank, "GPU"));
    return done;
  }

  /** Traffic on every pod. */
  public void traffic(int perPod) {
    for (SimulatedPod p : pods) {
      traffic(p, perPod);
    }
  }

  /** Every hash any pod held after any request of this fleet. */
  Set<Long> everHeld() {
    return everHeld;
  }

  private int[] tokens(int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = random.nextInt(32_000);
    }
    return t;
  }

  @Override
  public void close() {
    for (SimulatedPod p : pods) {
      p.close();
    }
  }
}
