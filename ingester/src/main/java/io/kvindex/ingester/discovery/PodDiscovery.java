package io.kvindex.ingester.discovery;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where the ingester learns which pods exist. Polled (level-triggered) every coordination tick, so
 * an implementation returns its current view cheaply. Implementations are thread-safe.
 *
 * <p>A Kubernetes implementation would watch pods by label and map annotations to {@link PodSpec}
 * fields; nothing else in the ingester changes.
 */
public interface PodDiscovery {

  /** The pods that exist now; a pod missing from the list is purged by its owner. */
  List<PodSpec> pods();

  /** A fixed list. */
  static PodDiscovery of(List<PodSpec> pods) {
    List<PodSpec> copy = List.copyOf(pods);
    return () -> copy;
  }

  /** A YAML or JSON file reloaded whenever it changes; see {@link FileDiscovery} for the format. */
  static PodDiscovery file(Path path) {
    return new FileDiscovery(path);
  }

  /** The union of several sources; a pod name seen twice keeps its first spec. */
  static PodDiscovery union(List<PodDiscovery> sources) {
    List<PodDiscovery> copy = List.copyOf(sources);
    return () -> {
      Map<String, PodSpec> byName = new LinkedHashMap<>();
      for (PodDiscovery d : copy) {
        for (PodSpec p : d.pods()) {
          byName.putIfAbsent(p.name(), p);
        }
      }
      return new ArrayList<>(byName.values());
    };
  }
}
