package io.kvindex.ingester.discovery;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * Where the ingester learns which pods exist. Polled (level-triggered) every coordination tick, so
 * an implementation returns its current view cheaply. Implementations are thread-safe.
 */
public interface PodDiscovery extends AutoCloseable {

  /** The pods that exist now; a pod missing from the list is purged by its owner. */
  List<PodSpec> pods();

  /**
   * Why {@link #pods()} may be out of date now (its source cannot be read, so it repeats what it
   * last knew), or empty when it is current. Shown on the ingester's {@code /readyz}.
   */
  default Optional<String> problem() {
    return Optional.empty();
  }

  /** Stops watching the source. Idempotent. */
  @Override
  default void close() {}

  /** A fixed list. */
  static PodDiscovery of(List<PodSpec> pods) {
    List<PodSpec> copy = List.copyOf(pods);
    return () -> copy;
  }

  /** A YAML or JSON file reloaded whenever it changes; see {@link FileDiscovery} for the format. */
  static PodDiscovery file(Path path) {
    return new FileDiscovery(path);
  }

  /**
   * The pods of a Kubernetes cluster that {@code options} select, watched from the API server of
   * the ingester's own pod (its service account), or else the current kubeconfig context; see
   * {@link KubernetesPod} for the annotations read and {@link PodTracker} for when a pod is a
   * stream. Its meters go to {@code registry}.
   */
  static PodDiscovery kubernetes(KubernetesOptions options, MeterRegistry registry) {
    return KubernetesDiscovery.connect(Config.autoConfigure(null), options, registry);
  }

  /**
   * As {@link #kubernetes(KubernetesOptions, MeterRegistry)}, through a client the caller owns (and
   * closes after this), with time from {@code ticker} (monotonic nanoseconds).
   */
  static PodDiscovery kubernetes(
      KubernetesClient client,
      KubernetesOptions options,
      MeterRegistry registry,
      LongSupplier ticker) {
    return KubernetesDiscovery.start(client, options, registry, ticker);
  }

  /**
   * The union of several sources; a pod name seen twice keeps its first spec. Its problems are
   * theirs; closing it closes them.
   */
  static PodDiscovery union(List<PodDiscovery> sources) {
    List<PodDiscovery> copy = List.copyOf(sources);
    return new PodDiscovery() {
      @Override
      public List<PodSpec> pods() {
        Map<String, PodSpec> byName = new LinkedHashMap<>();
        for (PodDiscovery d : copy) {
          for (PodSpec p : d.pods()) {
            byName.putIfAbsent(p.name(), p);
          }
        }
        return new ArrayList<>(byName.values());
      }

      @Override
      public Optional<String> problem() {
        String all =
            copy.stream()
                .map(PodDiscovery::problem)
                .flatMap(Optional::stream)
                .collect(Collectors.joining("; "));
        return all.isEmpty() ? Optional.empty() : Optional.of(all);
      }

      @Override
      public void close() {
        copy.forEach(PodDiscovery::close);
      }
    };
  }
}
