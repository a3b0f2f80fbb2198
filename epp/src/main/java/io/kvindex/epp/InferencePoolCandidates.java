package io.kvindex.epp;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.kvindex.common.Threads;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadPoolExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The candidates of an InferencePool ({@code inference.networking.k8s.io/v1}): each ready pod its
 * selector picks (Running, Ready, with an IP, not being deleted), once per target port (minus the
 * ports its {@code inference.networking.k8s.io/active-ports} annotation leaves out), as the
 * reference picker lists them. Thread-safe.
 *
 * <p>Implementation notes. Two informers (a list, then a watch): the pool by name, and the pods of
 * its namespace, filtered by the pool's current selector when the list is rebuilt, so a changed
 * selector needs no new watch. Any event marks the list stale; the next {@link #endpoints()} call
 * rebuilds it once, and the calls between events read it from memory. While either informer is not
 * watching, or the pool does not exist, {@link #problem()} says so (readiness), and the last list
 * built stays in use: an API server that is down empties nothing.
 */
final class InferencePoolCandidates implements Candidates {
  private static final Logger log = LoggerFactory.getLogger(InferencePoolCandidates.class);

  static final String KIND = "InferencePool";
  static final String ACTIVE_PORTS = "inference.networking.k8s.io/active-ports";

  /** The InferencePool resource, named in full so that no API discovery is needed. */
  static final ResourceDefinitionContext POOLS =
      new ResourceDefinitionContext.Builder()
          .withGroup("inference.networking.k8s.io")
          .withVersion("v1")
          .withKind(KIND)
          .withPlural("inferencepools")
          .withNamespaced(true)
          .build();

  private final KubernetesClient client;
  private final AutoCloseable owned;
  private final String namespace;
  private final String name;
  private final boolean podNameIsIp;
  private final SharedIndexInformer<GenericKubernetesResource> pool;
  private final SharedIndexInformer<Pod> pods;
  private final Counter errors;
  private volatile boolean stale = true;
  private volatile List<Endpoint> endpoints = List.of();
  private volatile String poolProblem = "not listed yet";
  private volatile boolean errorLogged;

  private InferencePoolCandidates(
      KubernetesClient client,
      AutoCloseable owned,
      String namespace,
      String name,
      boolean podNameIsIp,
      MeterRegistry registry) {
    this.client = client;
    this.owned = owned;
    this.namespace = namespace;
    this.name = name;
    this.podNameIsIp = podNameIsIp;
    this.errors =
        Counter.builder("kvindex.epp.kubernetes.errors")
            .description("Failed lists and watches of the pool and its pods")
            .register(registry);
    this.pool =
        client
            .genericKubernetesResources(POOLS)
            .inNamespace(namespace)
            .withName(name)
            .runnableInformer(0);
    this.pods = client.pods().inNamespace(namespace).runnableInformer(0);
    ResourceEventHandler<Object> changed =
        new ResourceEventHandler<>() {
          @Override
          public void onAdd(Object o) {
            stale = true;
          }

          @Override
          public void onUpdate(Object before, Object after) {
            stale = true;
          }

          @Override
          public void onDelete(Object o, boolean unknown) {
            stale = true;
          }
        };
    pool.addEventHandler(changed);
    pods.addEventHandler(changed);
    pool.exceptionHandler((started, e) -> failed("the InferencePool", e));
    pods.exceptionHandler((started, e) -> failed("pods", e));
  }

  /** Watches the pool through the given client, which the caller closes. */
  static InferencePoolCandidates start(
      KubernetesClient client,
      String namespace,
      String name,
      boolean podNameIsIp,
      MeterRegistry registry) {
    String ns = namespace != null ? namespace : ownNamespace(client);
    InferencePoolCandidates c =
        new InferencePoolCandidates(client, () -> {}, ns, name, podNameIsIp, registry);
    c.begin();
    return c;
  }

  /** Watches the pool through a client of its own ({@code config}: in a pod, its account's). */
  static InferencePoolCandidates connect(
      Config config, String namespace, String name, boolean podNameIsIp, MeterRegistry registry) {
    ThreadPoolExecutor executor =
        Threads.bounded(
            "kvindex-epp-kubernetes", 2, 1024, new ThreadPoolExecutor.CallerRunsPolicy());
    KubernetesClient client =
        new KubernetesClientBuilder().withConfig(config).withTaskExecutor(executor).build();
    String ns = namespace != null ? namespace : ownNamespace(client);
    InferencePoolCandidates c =
        new InferencePoolCandidates(
            client,
            () -> {
              client.close();
              executor.shutdownNow();
            },
            ns,
            name,
            podNameIsIp,
            registry);
    c.begin();
    return c;
  }

  private static String ownNamespace(KubernetesClient client) {
    String own = client.getNamespace();
    return own == null || own.isBlank() ? "default" : own;
  }

  private void begin() {
    pool.start();
    pods.start();
    log.info(
        "candidates: watching InferencePool {}/{} and its pods at {}",
        namespace,
        name,
        client.getMasterUrl());
  }

  @Override
  public List<Endpoint> endpoints() {
    if (stale && watching()) {
      rebuild();
    }
    return endpoints;
  }

  @Override
  public Optional<String> problem() {
    if (!pool.hasSynced() || !pool.isWatching()) {
      return Optional.of(
          "InferencePool "
              + namespace
              + "/"
              + name
              + " not listed and watched at "
              + client.getMasterUrl()
              + ": check that the API server is reachable and that the picker's service account"
              + " may get, list and watch inferencepools and pods there");
    }
    if (!pods.hasSynced() || !pods.isWatching()) {
      return Optional.of("pods of namespace " + namespace + " not listed and watched");
    }
    endpoints();
    String p = poolProblem;
    return p == null ? Optional.empty() : Optional.of(p);
  }

  private boolean watching() {
    return pool.hasSynced() && pods.hasSynced();
  }

  private synchronized void rebuild() {
    if (!stale) {
      return;
    }
    stale = false;
    List<GenericKubernetesResource> found = pool.getStore().list();
    if (found.isEmpty()) {
      poolProblem = "InferencePool " + namespace + "/" + name + " does not exist";
      endpoints = List.of();
      return;
    }
    PoolSpec spec;
    try {
      spec = PoolSpec.read(found.get(0));
    } catch (IllegalArgumentException e) {
      poolProblem = "InferencePool " + namespace + "/" + name + ": " + e.getMessage();
      return;
    }
    poolProblem = null;
    List<Endpoint> out = new ArrayList<>();
    List<Pod> all = new ArrayList<>(pods.getStore().list());
    all.sort(Comparator.comparing(p -> p.getMetadata().getName()));
    for (Pod p : all) {
      if (spec.selects(p) && ready(p)) {
        out.addAll(endpoints(p, spec.targetPorts()));
      }
    }
    if (!out.equals(endpoints)) {
      log.info("candidates: {} endpoints of InferencePool {}/{}", out.size(), namespace, name);
    }
    endpoints = List.copyOf(out);
  }

  private List<Endpoint> endpoints(Pod p, List<Integer> ports) {
    String ip = p.getStatus().getPodIP();
    String podName = podNameIsIp ? ip : p.getMetadata().getName();
    Set<Integer> active = activePorts(p, ports);
    List<Endpoint> out = new ArrayList<>();
    for (int rank = 0; rank < ports.size(); rank++) {
      int port = ports.get(rank);
      if (active.contains(port)) {
        out.add(
            ports.size() == 1
                ? Endpoint.of(podName, ip, port)
                : Endpoint.ranked(podName, rank, ip, port));
      }
    }
    return out;
  }

  private static Set<Integer> activePorts(Pod p, List<Integer> ports) {
    Map<String, String> annotations = p.getMetadata().getAnnotations();
    String listed = annotations == null ? null : annotations.get(ACTIVE_PORTS);
    if (listed == null) {
      return new HashSet<>(ports);
    }
    Set<Integer> out = new HashSet<>();
    for (String s : listed.split(",")) {
      try {
        int port = Integer.parseInt(s.trim());
        if (ports.contains(port)) {
          out.add(port);
        }
      } catch (NumberFormatException e) {
        // not a port: ignored, as the reference picker does
      }
    }
    return out;
  }

  /** Running, Ready, with an IP, and not being deleted. */
  static boolean ready(Pod p) {
    if (p.getMetadata().getDeletionTimestamp() != null || p.getStatus() == null) {
      return false;
    }
    String ip = p.getStatus().getPodIP();
    if (ip == null || ip.isBlank() || !"Running".equals(p.getStatus().getPhase())) {
      return false;
    }
    List<PodCondition> conditions = p.getStatus().getConditions();
    return conditions != null
        && conditions.stream()
            .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
  }

  private boolean failed(String what, Throwable e) {
    errors.increment();
    stale = true;
    String hint =
        e instanceof KubernetesClientException k && k.getCode() == 403
            ? ": grant the picker's service account get, list and watch on inferencepools and"
                + " pods in "
                + namespace
                + " (see deploy/kubernetes)"
            : "; retrying";
    if (!errorLogged) {
      errorLogged = true;
      log.warn("candidates: watching {} in {} failed ({}){}", what, namespace, e.toString(), hint);
    }
    return true;
  }

  @Override
  public void close() {
    pool.stop();
    pods.stop();
    try {
      owned.close();
    } catch (Exception e) {
      log.warn("candidates: closing the Kubernetes client failed: {}", e.toString());
    }
  }

  /** What the picker reads of a pool's spec: its selector's labels and its target ports. */
  record PoolSpec(Map<String, String> matchLabels, List<Integer> targetPorts) {
    @SuppressWarnings("unchecked")
    static PoolSpec read(GenericKubernetesResource pool) {
      Object spec = pool.getAdditionalProperties().get("spec");
      if (!(spec instanceof Map<?, ?> s)) {
        throw new IllegalArgumentException("no spec");
      }
      Object selector = s.get("selector");
      Object labels = selector instanceof Map<?, ?> m ? m.get("matchLabels") : null;
      if (!(labels instanceof Map<?, ?> l) || l.isEmpty()) {
        throw new IllegalArgumentException("spec.selector.matchLabels is missing or empty");
      }
      Map<String, String> match = new LinkedHashMap<>();
      ((Map<Object, Object>) l).forEach((k, v) -> match.put(String.valueOf(k), String.valueOf(v)));
      Object ports = s.get("targetPorts");
      if (!(ports instanceof List<?> list) || list.isEmpty()) {
        throw new IllegalArgumentException("spec.targetPorts is missing or empty");
      }
      List<Integer> numbers = new ArrayList<>();
      for (Object p : list) {
        Object n = p instanceof Map<?, ?> pm ? pm.get("number") : null;
        if (!(n instanceof Number number)) {
          throw new IllegalArgumentException("a target port has no number: " + p);
        }
        numbers.add(number.intValue());
      }
      return new PoolSpec(match, numbers);
    }

    boolean selects(Pod p) {
      Map<String, String> labels = p.getMetadata().getLabels();
      if (labels == null) {
        return false;
      }
      for (Map.Entry<String, String> e : matchLabels.entrySet()) {
        if (!e.getValue().equals(labels.get(e.getKey()))) {
          return false;
        }
      }
      return true;
    }
  }
}
