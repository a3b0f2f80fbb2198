package io.kvindex.ingester.discovery;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.ingester.discovery.KubernetesOptions.PodName;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What one Kubernetes pod object tells discovery: whether it may be a stream now (running, ready,
 * with an IP), which incarnation of its engine runs, and the spec its annotations give, or the
 * problem that keeps them from giving one. A terminating pod gives no spec: it is gone already.
 * Immutable and thread-safe.
 *
 * @param key {@code namespace/name}
 * @param uid the pod's UID
 * @param ip the pod's IP, or {@code ""} while it has none
 * @param ready whether the pod may be a stream now
 * @param spec what its annotations give, or {@code null} (no IP yet, terminating, or a problem)
 * @param problem why its annotations give no spec, or {@code null}
 */
record KubernetesPod(
    String key, String uid, String ip, boolean ready, PodSpec spec, Problem problem) {

  static final String MODEL = "kvindex.io/model";
  static final String KV_EVENTS_PORT = "kvindex.io/kv-events-port";
  static final String REPLAY_PORT = "kvindex.io/replay-port";
  static final String METRICS_PORT = "kvindex.io/metrics-port";
  static final String DP_RANKS = "kvindex.io/dp-ranks";
  static final String KEY_MODE = "kvindex.io/key-mode";
  static final String TOPIC = "kvindex.io/topic";
  static final String CONTAINER = "kvindex.io/container";

  /** vLLM's default publisher endpoint is {@code tcp://*:5557}. */
  static final int DEFAULT_KV_EVENTS_PORT = 5557;

  /** vLLM's OpenAI server listens on 8000 and serves {@code /metrics} there. */
  static final int DEFAULT_METRICS_PORT = 8000;

  /**
   * Why a pod is not a stream although the selector picks it.
   *
   * @param reason the metric tag: {@code no_model}, {@code bad_annotation}, {@code duplicate_name}
   * @param message what is wrong and what to do, for the log
   */
  record Problem(String reason, String message) {}

  /** The pod's incarnation, for a spec: it is read with the spec. */
  String incarnation() {
    return spec == null ? "" : spec.incarnation();
  }

  /** Reads a pod; never throws for what a pod's author may get wrong. */
  static KubernetesPod read(Pod pod, PodName naming) {
    String key = pod.getMetadata().getNamespace() + "/" + pod.getMetadata().getName();
    String uid = text(pod.getMetadata().getUid());
    PodStatus status = pod.getStatus() == null ? new PodStatus() : pod.getStatus();
    String ip = text(status.getPodIP());
    boolean terminating = pod.getMetadata().getDeletionTimestamp() != null;
    boolean ready = "Running".equals(status.getPhase()) && isReady(status) && !ip.isEmpty();
    Map<String, String> notes =
        pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
    String model = notes.get(MODEL);
    if (model == null || model.isBlank()) {
      return new KubernetesPod(
          key,
          uid,
          ip,
          ready,
          null,
          new Problem(
              "no_model",
              "pod "
                  + key
                  + " has no annotation "
                  + MODEL
                  + ": annotate it with the model it serves, as requests name it"));
    }
    try {
      if (ip.isEmpty() || terminating) {
        return new KubernetesPod(key, uid, ip, false, null, null); // no stream, and none to keep
      }
      return new KubernetesPod(
          key, uid, ip, ready, spec(pod, notes, naming, ip, uid, status), null);
    } catch (IllegalArgumentException e) {
      return new KubernetesPod(
          key,
          uid,
          ip,
          ready,
          null,
          new Problem("bad_annotation", "pod " + key + ": " + e.getMessage()));
    }
  }

  private static PodSpec spec(
      Pod pod, Map<String, String> notes, PodName naming, String ip, String uid, PodStatus status) {
    String host = ip.contains(":") ? "[" + ip + "]" : ip;
    int events = port(notes, KV_EVENTS_PORT, DEFAULT_KV_EVENTS_PORT);
    Integer replay = notes.containsKey(REPLAY_PORT) ? port(notes, REPLAY_PORT, 0) : null;
    int metrics = port(notes, METRICS_PORT, DEFAULT_METRICS_PORT);
    KeyMode keyMode = keyMode(notes.get(KEY_MODE));
    try {
      return new PodSpec(
          naming == PodName.IP ? ip : pod.getMetadata().getName(),
          notes.get(MODEL).trim(),
          "tcp://" + host + ":" + events,
          false,
          replay == null ? null : "tcp://" + host + ":" + replay,
          "http://" + host + ":" + metrics + "/metrics",
          ranks(notes.get(DP_RANKS)),
          keyMode,
          notes.get(TOPIC),
          uid + "/" + engine(pod, notes, status));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "its kvindex.io/ annotations do not make a pod spec: " + e.getMessage(), e);
    }
  }

  private static boolean isReady(PodStatus status) {
    for (PodCondition c : listed(status.getConditions())) {
      if ("Ready".equals(c.getType())) {
        return "True".equals(c.getStatus());
      }
    }
    return false;
  }

  /**
   * The engine container's restart count and ID: a restarted engine lost its cache, whatever its
   * pod's name and IP.
   */
  private static String engine(Pod pod, Map<String, String> notes, PodStatus status) {
    List<Container> containers =
        pod.getSpec() == null ? List.of() : listed(pod.getSpec().getContainers());
    String name = notes.get(CONTAINER);
    if (name == null) {
      name = containers.isEmpty() ? "" : containers.get(0).getName();
    } else if (containers.stream().noneMatch(c -> c.getName().equals(notes.get(CONTAINER)))) {
      throw new IllegalArgumentException(
          "annotation "
              + CONTAINER
              + " names container '"
              + name
              + "', which the pod does not have: name its vLLM container, one of "
              + containers.stream().map(Container::getName).toList());
    }
    for (ContainerStatus c : listed(status.getContainerStatuses())) {
      if (c.getName().equals(name)) {
        return c.getRestartCount() + "/" + text(c.getContainerID());
      }
    }
    return "-";
  }

  private static int port(Map<String, String> notes, String key, int fallback) {
    String v = notes.get(key);
    if (v == null) {
      return fallback;
    }
    try {
      int port = Integer.parseInt(v.trim());
      if (port >= 1 && port <= 0xFFFF) {
        return port;
      }
    } catch (NumberFormatException e) {
      // the message below says what is wanted
    }
    throw new IllegalArgumentException(
        "annotation " + key + " is '" + v + "': give a port number from 1 to 65535");
  }

  private static KeyMode keyMode(String v) {
    try {
      return PodSpec.keyMode(v == null ? null : v.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "annotation " + KEY_MODE + " is '" + v + "': " + e.getMessage(), e);
    }
  }

  private static List<Integer> ranks(String v) {
    List<Integer> out = new ArrayList<>();
    if (v == null) {
      return out;
    }
    String[] given = v.split("[;,]", PodSpec.MAX_DP_RANKS + 2);
    if (given.length > PodSpec.MAX_DP_RANKS) {
      throw new IllegalArgumentException(
          "annotation "
              + DP_RANKS
              + " names more than "
              + PodSpec.MAX_DP_RANKS
              + " ranks, the limit per pod: list the ranks this pod runs, like 0;1");
    }
    for (String r : given) {
      int rank;
      try {
        rank = Integer.parseInt(r.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "annotation "
                + DP_RANKS
                + " is '"
                + (v.length() > 64 ? v.substring(0, 64) + "..." : v)
                + "': give ranks separated by ';', like 0;1",
            e);
      }
      if (rank < 0 || rank > 0xFFFF || out.contains(rank)) {
        throw new IllegalArgumentException(
            "annotation "
                + DP_RANKS
                + (rank < 0 || rank > 0xFFFF ? " has rank " : " names twice rank ")
                + rank
                + ": give each rank the pod runs once, from 0 to 65535, like 0;1");
      }
      out.add(rank);
    }
    return out;
  }

  private static <T> List<T> listed(List<T> list) {
    return list == null ? List.of() : list;
  }

  private static String text(String s) {
    return s == null ? "" : s;
  }
}
