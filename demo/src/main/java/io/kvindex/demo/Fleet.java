package io.kvindex.demo;

import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The simulated pods of one run, by name, with their ground truth. Every run gets a fresh fleet of
 * the same shape, so the routing policies are compared on equal terms. Thread-safe as the pods are.
 */
final class Fleet implements AutoCloseable {
  private final Map<String, SimulatedPod> pods = new LinkedHashMap<>();

  private Fleet() {}

  /**
   * Starts {@code config.pods()} pods named {@code pod-0}, {@code pod-1}, ...
   *
   * @param http whether each pod serves its HTTP endpoint (the ingesters read its /metrics)
   */
  static Fleet start(DemoConfig config, boolean http) {
    Fleet fleet = new Fleet();
    try {
      for (int i = 0; i < config.pods(); i++) {
        PodConfig pod =
            PodConfig.builder()
                .name("pod-" + i)
                .model(Workloads.MODEL)
                .blockSize(Workloads.BLOCK_SIZE)
                .capacityBlocks(config.capacityBlocks())
                .hashSeed(Stack.HASH_SEED)
                .http(http)
                .seed(i + 1)
                .build();
        fleet.pods.put(pod.name(), SimulatedPod.start(pod));
      }
      return fleet;
    } catch (RuntimeException e) {
      fleet.close();
      throw e;
    }
  }

  List<String> names() {
    return List.copyOf(pods.keySet());
  }

  List<SimulatedPod> pods() {
    return List.copyOf(pods.values());
  }

  SimulatedPod pod(String name) {
    SimulatedPod pod = pods.get(name);
    if (pod == null) {
      throw new IllegalArgumentException("no pod " + name + " in the fleet " + pods.keySet());
    }
    return pod;
  }

  Completion submit(String pod, InferenceRequest request) {
    return pod(pod).submit(request);
  }

  /** Ground truth: the blocks the pod holds on any tier (the demo's pods have one rank). */
  Set<Long> held(String pod) {
    Set<Long> all = new HashSet<>();
    pod(pod).cachedBlocks(0).values().forEach(all::addAll);
    return all;
  }

  @Override
  public void close() {
    List<RuntimeException> failures = new ArrayList<>();
    for (SimulatedPod pod : pods.values()) {
      try {
        pod.close();
      } catch (RuntimeException e) {
        failures.add(e);
      }
    }
    if (!failures.isEmpty()) {
      RuntimeException first = failures.get(0);
      failures.subList(1, failures.size()).forEach(first::addSuppressed);
      throw first;
    }
  }
}
