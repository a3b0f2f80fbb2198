package io.kvindex.demo;

import io.kvindex.epp.Endpoint;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.SimulatedFleet;
import io.kvindex.simulator.SimulatedPod;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One run's simulated fleet, with its ground truth. Every run gets a fresh fleet of the same shape,
 * so the routing policies are compared on equal terms. Thread-safe as the simulator's fleet is.
 */
public final class Fleet implements AutoCloseable {
  private final SimulatedFleet fleet;
  private final io.kvindex.simulator.ModelKind modelKind;

  private Fleet(SimulatedFleet fleet, io.kvindex.simulator.ModelKind modelKind) {
    this.fleet = fleet;
    this.modelKind = modelKind;
  }

  /** The pods' model. */
  io.kvindex.simulator.ModelKind modelKind() {
    return modelKind;
  }

  /**
   * Starts {@code config.pods()} pods named {@code pod-0}, {@code pod-1}, ...
   *
   * @param capacityBlocks each pod's GPU KV-cache capacity
   * @param http whether each pod serves its HTTP endpoint (the ingesters read its /metrics)
   */
  public static Fleet start(DemoConfig config, int capacityBlocks, boolean http) {
    PodConfig template =
        PodConfig.builder()
            .model(Workloads.MODEL)
            .blockSize(Workloads.BLOCK_SIZE)
            .modelKind(config.modelKind())
            .capacityBlocks(capacityBlocks)
            .hashSeed(Stack.HASH_SEED)
            .http(http)
            .build();
    return new Fleet(
        SimulatedFleet.builder()
            .pods(config.pods())
            .podTemplate(template)
            .seed(config.seed())
            .build(),
        config.modelKind());
  }

  public List<String> names() {
    return fleet.pods().stream().map(SimulatedPod::name).toList();
  }

  public List<SimulatedPod> pods() {
    return fleet.pods();
  }

  public SimulatedPod pod(String name) {
    return fleet.pod(name);
  }

  /** Serves the request on the pod {@code router} picks (refusals are counted in the stats). */
  public Completion submit(InferenceRequest request, PodRouter router) {
    return fleet.submit(Workloads.MODEL, request, router);
  }

  /** Ground truth: each cache group's GPU blocks on the pod (the demo's pods have one rank). */
  java.util.Map<Integer, Set<Long>> heldByGroup(String pod) {
    return fleet.pod(pod).cachedGroupBlocks(0);
  }

  /** Ground truth: the blocks the pod holds on any tier (the demo's pods have one rank). */
  public Set<Long> held(String pod) {
    Set<Long> all = new HashSet<>();
    fleet.pod(pod).cachedBlocks(0).values().forEach(all::addAll);
    return all;
  }

  /** The pods as an endpoint picker's candidates: each pod's name and its OpenAI address. */
  List<Endpoint> endpoints() {
    List<Endpoint> out = new ArrayList<>();
    for (SimulatedPod pod : pods()) {
      URI http = pod.httpAddress();
      out.add(Endpoint.of(pod.name(), http.getHost(), http.getPort()));
    }
    return out;
  }

  /**
   * What an ingester is told of each pod: its endpoints and the metrics URL in {@code metricsUrls}
   * (by pod name; the pod's own when absent).
   */
  List<PodSpec> podSpecs(Map<String, String> metricsUrls) {
    List<PodSpec> specs = new ArrayList<>();
    for (SimulatedPod pod : pods()) {
      specs.add(
          PodSpec.of(
                  pod.name(),
                  pod.model(),
                  pod.endpoints().get(0).publish(),
                  pod.endpoints().get(0).replay())
              .withMetricsUrl(metricsUrls.getOrDefault(pod.name(), ownMetricsUrl(pod))));
    }
    return specs;
  }

  /** A pod's own {@code /metrics} URL. */
  static String ownMetricsUrl(SimulatedPod pod) {
    return pod.httpAddress() + "/metrics";
  }

  @Override
  public void close() {
    fleet.close();
  }
}
