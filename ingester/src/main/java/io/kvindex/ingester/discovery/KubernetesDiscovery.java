package io.kvindex.ingester.discovery;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.kvindex.common.Threads;
import io.kvindex.ingester.discovery.KubernetesPod.Problem;
import io.kvindex.ingester.discovery.PodTracker.Round;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pods of a Kubernetes cluster, from one shared informer (a list, then a watch) per namespace over
 * the pods the label selector picks, read at each {@link #pods()} call. Thread-safe.
 *
 * <p>Implementation notes. Nothing here is edge-triggered: each call reads every informer's store
 * and lets {@link PodTracker} decide, so there is no event handler to drift and no resync to
 * correct one (each call is a full resync). While any informer is not watching (not listed yet, its
 * watch broken, the API server gone), a call returns the previous answer and no timer moves: an
 * unreachable API server never purges a pod by itself, and shows on {@link #problem()} and on the
 * {@code kvindex_ingester_discovery_healthy} gauge instead. The client retries a broken watch from
 * its resource version and lists again when the API server answers 410 Gone; the store keeps its
 * pods meanwhile and a list replaces them in one step, so a pod still there is never dropped. The
 * informers retry failed lists forever; each failure is counted, the first of an outage logged.
 */
final class KubernetesDiscovery implements PodDiscovery {
  private static final Logger log = LoggerFactory.getLogger(KubernetesDiscovery.class);

  private final KubernetesClient client;
  private final AutoCloseable owned;
  private final LongSupplier ticker;
  private final Map<String, SharedIndexInformer<Pod>> informers = new LinkedHashMap<>();
  private final KubernetesOptions options;
  private final PodTracker tracker;
  private final MeterRegistry registry;
  private final Counter errors;
  private volatile List<PodSpec> last = List.of();
  private volatile long unhealthySince;
  private volatile boolean healthy;
  private volatile boolean errorLogged;

  private KubernetesDiscovery(
      KubernetesClient client,
      AutoCloseable owned,
      KubernetesOptions options,
      MeterRegistry registry,
      LongSupplier ticker) {
    this.client = client;
    this.owned = owned;
    this.options = options;
    this.registry = registry;
    this.ticker = ticker;
    this.tracker = new PodTracker(options.notReadyAfter());
    this.unhealthySince = ticker.getAsLong();
    this.errors =
        Counter.builder("kvindex.ingester.discovery.errors")
            .description("Failed lists and watches of pods the Kubernetes client reported")
            .register(registry);
    Gauge.builder("kvindex.ingester.discovery.healthy", this, d -> d.watching().isEmpty() ? 1 : 0)
        .description("1 while every namespace's pods are listed and watched, else 0")
        .register(registry);
  }

  /** Watches pods through the given client, which the caller closes. */
  static KubernetesDiscovery start(
      KubernetesClient client,
      KubernetesOptions options,
      MeterRegistry registry,
      LongSupplier ticker) {
    return start(client, () -> {}, options, registry, ticker);
  }

  /**
   * Watches pods through a client of its own to the API server {@code config} names (in a pod: its
   * service account's), closed with it.
   */
  static KubernetesDiscovery connect(
      Config config, KubernetesOptions options, MeterRegistry registry) {
    ThreadPoolExecutor executor =
        Threads.bounded("kvindex-kubernetes", 2, 1024, new ThreadPoolExecutor.CallerRunsPolicy());
    KubernetesClient client =
        new KubernetesClientBuilder().withConfig(config).withTaskExecutor(executor).build();
    AutoCloseable owned =
        () -> {
          client.close();
          executor.shutdownNow();
        };
    return start(client, owned, options, registry, System::nanoTime);
  }

  private static KubernetesDiscovery start(
      KubernetesClient client,
      AutoCloseable owned,
      KubernetesOptions options,
      MeterRegistry registry,
      LongSupplier ticker) {
    KubernetesDiscovery d = new KubernetesDiscovery(client, owned, options, registry, ticker);
    try {
      d.inform();
      return d;
    } catch (RuntimeException e) {
      d.close();
      throw e;
    }
  }

  private void inform() {
    List<String> namespaces = options.namespaces();
    if (namespaces.isEmpty()) {
      String own = client.getNamespace();
      namespaces = List.of(own == null || own.isBlank() ? "default" : own);
    }
    for (String ns : namespaces) {
      SharedIndexInformer<Pod> informer =
          client
              .pods()
              .inNamespace(ns)
              .withLabelSelector(options.labelSelector())
              .runnableInformer(0);
      informer.exceptionHandler((started, e) -> failed(ns, e));
      informers.put(ns, informer);
    }
    informers.values().forEach(SharedIndexInformer::start);
    log.info(
        "discovery: watching pods labelled {} in namespaces {} at {}",
        options.labelSelector(),
        informers.keySet(),
        client.getMasterUrl());
  }

  @Override
  public synchronized List<PodSpec> pods() {
    Set<String> down = watching();
    if (!down.isEmpty()) {
      if (healthy) {
        healthy = false;
        unhealthySince = ticker.getAsLong();
        log.warn("discovery: {}", problem(down));
      }
      return last;
    }
    if (!healthy) {
      healthy = true;
      errorLogged = false;
      log.info("discovery: listing and watching pods in {}", informers.keySet());
    }
    List<KubernetesPod> observed = new ArrayList<>();
    informers.values().forEach(i -> i.getStore().list().forEach(p -> observed.add(read(p))));
    Round round = tracker.update(observed, ticker.getAsLong());
    round.problems().forEach(this::skipped);
    logChanges(last, round.pods());
    last = round.pods();
    return last;
  }

  @Override
  public Optional<String> problem() {
    Set<String> down = watching();
    return down.isEmpty() ? Optional.empty() : Optional.of(problem(down));
  }

  /** Whether a pod that is a stream is not ready now (for tests). */
  synchronized boolean notReady(String namespace, String name) {
    return tracker.notReady(namespace + "/" + name);
  }

  @Override
  public void close() {
    informers.values().forEach(SharedIndexInformer::stop);
    try {
      owned.close();
    } catch (Exception e) {
      log.warn("discovery: closing the Kubernetes client failed: {}", e.toString());
    }
  }

  private KubernetesPod read(Pod pod) {
    return KubernetesPod.read(pod, options.podName());
  }

  /** The namespaces whose pods are not both listed and watched now. */
  private Set<String> watching() {
    Set<String> down = new TreeSet<>();
    informers.forEach(
        (ns, i) -> {
          if (!i.hasSynced() || !i.isWatching()) {
            down.add(ns);
          }
        });
    return down;
  }

  private String problem(Set<String> down) {
    long seconds = Duration.ofNanos(ticker.getAsLong() - unhealthySince).toSeconds();
    return "kubernetes: pods in namespace "
        + String.join(", ", down)
        + " not listed and watched at "
        + client.getMasterUrl()
        + (healthy || seconds == 0 ? "" : " for " + seconds + " s")
        + "; serving the last "
        + last.size()
        + " pods known: check that the API server is reachable and that the ingester's"
        + " service account may get, list and watch pods there";
  }

  private boolean failed(String namespace, Throwable e) {
    errors.increment();
    String hint =
        e instanceof KubernetesClientException k && k.getCode() == 403
            ? ": grant the ingester's service account get, list and watch on pods in "
                + namespace
                + " (see deploy/kubernetes)"
            : "; retrying";
    if (!errorLogged) {
      errorLogged = true;
      log.warn("discovery: listing pods in {} failed ({}){}", namespace, e.toString(), hint);
    } else {
      log.debug("discovery: listing pods in {} failed again: {}", namespace, e.toString());
    }
    return true;
  }

  private void skipped(Problem p) {
    Counter.builder("kvindex.ingester.discovery.pods.skipped")
        .description("Pods the selector picks that cannot be streams, each counted once")
        .tag("reason", p.reason())
        .register(registry)
        .increment();
    log.warn("discovery: skipped {}", p.message());
  }

  private static void logChanges(List<PodSpec> before, List<PodSpec> now) {
    Map<String, PodSpec> old = new LinkedHashMap<>();
    before.forEach(p -> old.put(p.name(), p));
    for (PodSpec p : now) {
      PodSpec was = old.remove(p.name());
      if (!p.equals(was)) {
        log.info(
            "discovery: pod {} is a stream ({}, incarnation {})", p, p.model(), p.incarnation());
      }
    }
    old.values().forEach(p -> log.info("discovery: pod {} is no longer a stream", p));
  }
}
