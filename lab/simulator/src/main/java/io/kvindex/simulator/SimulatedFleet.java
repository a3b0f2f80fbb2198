package io.kvindex.simulator;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;

/**
 * N simulated vLLM pods serving one or more models, a routing function, and the fleet's prefix
 * cache hit rate.
 *
 * <pre>{@code
 * try (SimulatedFleet fleet = SimulatedFleet.builder().pods(4).build()) {
 *   fleet.pods().forEach(p -> System.out.println(p.endpoints()));
 *   Completion c = fleet.submit(request);                 // the fleet's router
 *   Completion d = fleet.submit("sim-model", request, myRouter);
 *   double hitRate = fleet.stats().hitRate();
 * }
 * }</pre>
 *
 * <p>Thread-safe: pods serialise their own engines; statistics are atomic.
 */
public interface SimulatedFleet extends AutoCloseable {

  static Builder builder() {
    return new Builder();
  }

  /** All pods, in creation order ({@code pod-0}, {@code pod-1}, ...). */
  List<SimulatedPod> pods();

  /** The pods serving {@code model}. */
  List<SimulatedPod> pods(String model);

  /** The pod of that name. */
  SimulatedPod pod(String name);

  /** The models served, in the order given to the builder. */
  List<String> models();

  /** Serves a request for the first model with the fleet's router. */
  Completion submit(InferenceRequest request);

  /** Serves a request for {@code model} with the fleet's router. */
  Completion submit(String model, InferenceRequest request);

  /**
   * Serves a request for {@code model} on the pod {@code router} picks.
   *
   * @throws IllegalArgumentException if no pod serves {@code model}
   * @throws PodUnavailableException if the chosen pod is asleep (counted as failed)
   * @throws RequestTooLargeException if the request does not fit (counted as failed)
   */
  Completion submit(String model, InferenceRequest request, PodRouter router);

  /** Counters since the fleet started. */
  FleetStats stats();

  /** Closes every pod. */
  @Override
  void close();

  /** Builds a fleet; each setter checks its argument at once. Not thread-safe. */
  final class Builder {
    int pods = 4;
    List<String> models = List.of();
    PodConfig template = PodConfig.builder().build();
    PodRouter router;
    long seed = 1;
    BiConsumer<Integer, PodConfig.Builder> perPod = (index, pod) -> {};

    private Builder() {}

    /** Number of pods. Default 4. */
    public Builder pods(int pods) {
      if (pods < 1) {
        throw new IllegalArgumentException("pods must be >= 1, got " + pods);
      }
      this.pods = pods;
      return this;
    }

    /** The models served; pods are assigned to them in turn. Default the template's model only. */
    public Builder models(List<String> models) {
      if (models.isEmpty()) {
        throw new IllegalArgumentException("models must not be empty");
      }
      this.models = List.copyOf(models);
      return this;
    }

    /**
     * The settings every pod starts from; each pod gets its own name ({@code pod-i}), seed and
     * model, and {@code {pod}} and {@code {model}} in the template's topic are replaced (so {@code
     * kv@{pod}@{model}} gives llm-d's convention). A template endpoint with a real port is a base:
     * pod {@code i} uses port + i x data-parallel size (so every rank of every pod has its own
     * port, as fixed ports for containers need); port 0 gives each socket a free port. Default
     * {@link PodConfig#builder()}'s defaults.
     */
    public Builder podTemplate(PodConfig template) {
      this.template = Objects.requireNonNull(template, "template");
      return this;
    }

    /** The default router. Default {@link PodRouter#random(long)} with the fleet seed. */
    public Builder router(PodRouter router) {
      this.router = Objects.requireNonNull(router, "router");
      return this;
    }

    /**
     * Adjusts pod {@code index}'s settings after the template and the fleet's own (name, model,
     * seed, topic) are applied, for example a different wire era per pod. Default no change.
     */
    public Builder perPod(BiConsumer<Integer, PodConfig.Builder> perPod) {
      this.perPod = Objects.requireNonNull(perPod, "perPod");
      return this;
    }

    /** Seeds pods and the default router. Default 1. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /**
     * The template's endpoints shifted by {@code offset} ports, its HTTP port by the pod's {@code
     * index} (those with port 0 stay 0).
     */
    private PodConfig.Builder withPorts(PodConfig.Builder pod, int offset, int index) {
      pod.httpBind(shiftedAddress(template.httpBind(), index));
      String publish = shifted(template.publishEndpoint(), offset);
      if (template.publishBind()) {
        pod.publishBind(publish);
      } else {
        pod.publishConnect(publish);
      }
      return pod.replayBind(shifted(template.replayEndpoint(), offset));
    }

    static InetSocketAddress shiftedAddress(InetSocketAddress address, int offset) {
      return address.getPort() == 0 || offset == 0
          ? address
          : new InetSocketAddress(address.getAddress(), address.getPort() + offset);
    }

    static String shifted(String endpoint, int offset) {
      if (endpoint == null || offset == 0) {
        return endpoint;
      }
      int colon = endpoint.lastIndexOf(':');
      int port = Integer.parseInt(endpoint.substring(colon + 1));
      return port == 0 ? endpoint : endpoint.substring(0, colon + 1) + (port + offset);
    }

    /** Starts every pod; if one fails, the ones started are closed again. */
    public SimulatedFleet build() {
      List<String> served = models.isEmpty() ? List.of(template.model()) : models;
      List<SimulatedPod> started = new ArrayList<>();
      try {
        for (int i = 0; i < pods; i++) {
          PodConfig.Builder pod =
              withPorts(template.toBuilder(), i * template.dataParallelSize(), i)
                  .name("pod-" + i)
                  .model(served.get(i % served.size()))
                  .topic(
                      template
                          .topic()
                          .replace("{pod}", "pod-" + i)
                          .replace("{model}", served.get(i % served.size())))
                  .seed(seed * 1_000_003L + i);
          perPod.accept(i, pod);
          started.add(SimulatedPod.start(pod.build()));
        }
      } catch (RuntimeException e) {
        started.forEach(SimulatedPod::close);
        throw e;
      }
      return new DefaultSimulatedFleet(
          started, served, router == null ? PodRouter.random(seed) : router);
    }
  }
}
