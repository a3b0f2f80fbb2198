package io.kvindex.ingester.discovery;

import io.kvindex.common.Check;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What Kubernetes discovery watches and how it names pods. Immutable and thread-safe.
 *
 * @param namespaces the namespaces whose pods are watched; empty means the client's own namespace
 *     (the ingester pod's, from its service account), else {@code default}
 * @param labelSelector the pods watched, as a Kubernetes label selector ({@code
 *     kvindex.io/enabled=true})
 * @param notReadyAfter how long a pod that was a stream may stay not ready before it stops being
 *     one (and is purged)
 * @param podName what names a pod in the index, which is the routing key gateways use
 */
public record KubernetesOptions(
    List<String> namespaces, String labelSelector, Duration notReadyAfter, PodName podName) {

  private static final Pattern NAMESPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

  /** What names a pod in the index. */
  public enum PodName {
    /** The pod's name ({@code metadata.name}). */
    NAME,
    /** The pod's IP address ({@code status.podIP}). */
    IP;

    /**
     * {@code name} or {@code ip}, any case.
     *
     * @throws IllegalArgumentException naming the accepted values
     */
    public static PodName parse(String text) {
      Check.notNull(text, "podName");
      for (PodName p : values()) {
        if (p.name().equalsIgnoreCase(text.trim())) {
          return p;
        }
      }
      throw new IllegalArgumentException(
          "the pod name must be 'name' (the pod's name) or 'ip' (its IP address), got '"
              + text
              + "'");
    }

    @Override
    public String toString() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public KubernetesOptions {
    namespaces = List.copyOf(Check.notNull(namespaces, "namespaces"));
    namespaces.forEach(KubernetesOptions::checkNamespace);
    Check.notBlank(labelSelector, "labelSelector");
    Check.positive(notReadyAfter, "notReadyAfter");
    Check.notNull(podName, "podName");
  }

  /**
   * Namespaces from a comma-separated list; blanks are dropped.
   *
   * @throws IllegalArgumentException for a name Kubernetes would refuse
   */
  public static List<String> namespaces(String commaSeparated) {
    List<String> out =
        List.of(commaSeparated.split(",")).stream()
            .map(String::trim)
            .filter(s -> !s.isEmpty())
            .distinct()
            .toList();
    out.forEach(KubernetesOptions::checkNamespace);
    return out;
  }

  private static void checkNamespace(String ns) {
    if (!NAMESPACE.matcher(ns).matches()) {
      throw new IllegalArgumentException(
          "namespace '"
              + ns
              + "' is not a Kubernetes namespace name (lower-case letters, digits and '-',"
              + " at most 63): list namespaces separated by commas");
    }
  }
}
