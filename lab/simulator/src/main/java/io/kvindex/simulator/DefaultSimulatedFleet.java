package io.kvindex.simulator;

import io.kvindex.common.KvIndexException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** The {@link SimulatedFleet} implementation. Thread-safe. */
final class DefaultSimulatedFleet implements SimulatedFleet {
  private final List<SimulatedPod> pods;
  private final List<String> models;
  private final Map<String, List<SimulatedPod>> byModel = new LinkedHashMap<>();
  private final PodRouter router;
  private final LongAdder requests = new LongAdder();
  private final LongAdder failed = new LongAdder();
  private final LongAdder promptTokens = new LongAdder();
  private final LongAdder cachedTokens = new LongAdder();

  DefaultSimulatedFleet(List<SimulatedPod> pods, List<String> models, PodRouter router) {
    this.pods = List.copyOf(pods);
    this.models = List.copyOf(models);
    this.router = router;
    for (String model : models) {
      byModel.put(model, pods.stream().filter(p -> p.model().equals(model)).toList());
    }
  }

  @Override
  public List<SimulatedPod> pods() {
    return pods;
  }

  @Override
  public List<SimulatedPod> pods(String model) {
    List<SimulatedPod> serving = byModel.get(model);
    if (serving == null || serving.isEmpty()) {
      throw new IllegalArgumentException("no pod serves model " + model + "; models: " + models);
    }
    return serving;
  }

  @Override
  public SimulatedPod pod(String name) {
    return pods.stream()
        .filter(p -> p.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no pod named " + name));
  }

  @Override
  public List<String> models() {
    return models;
  }

  @Override
  public Completion submit(InferenceRequest request) {
    return submit(models.get(0), request);
  }

  @Override
  public Completion submit(String model, InferenceRequest request) {
    return submit(model, request, router);
  }

  @Override
  public Completion submit(String model, InferenceRequest request, PodRouter router) {
    List<SimulatedPod> candidates = pods(model);
    SimulatedPod pod = router.choose(request, candidates);
    if (!candidates.contains(pod)) {
      throw new IllegalArgumentException(
          "the router chose " + pod + ", which does not serve model " + model);
    }
    Completion done;
    try {
      done = pod.submit(request);
    } catch (KvIndexException e) {
      failed.increment();
      router.refused(request, pod);
      throw e;
    }
    requests.increment();
    promptTokens.add(done.promptTokens());
    cachedTokens.add(done.cachedTokens());
    router.served(request, done);
    return done;
  }

  @Override
  public FleetStats stats() {
    return new FleetStats(requests.sum(), failed.sum(), promptTokens.sum(), cachedTokens.sum());
  }

  @Override
  public void close() {
    pods.forEach(SimulatedPod::close);
  }
}
