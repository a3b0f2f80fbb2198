package io.kvindex.ingester;

import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.keycheck.KeyChecks;
import io.kvindex.ingester.lease.Coordinator;
import io.kvindex.ingester.reconcile.Reconciler;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.service.HttpService;
import io.kvindex.service.HttpService.Probe;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmHeapPressureMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZContext;

/**
 * The stateless ingester service: discovers pods, owns some of their streams by lease, keeps the
 * shared index equal to what their engines hold, and serves /metrics, /healthz and /readyz.
 * Thread-safe; {@link #close()} is graceful (leases released at once).
 *
 * <pre>{@code
 * try (Ingester ingester = Ingester.start(IngesterConfig.builder()
 *     .redisUri("redis://127.0.0.1:6379")
 *     .pod(PodSpec.of("pod-a", "llama", "tcp://10.0.0.7:5557", "tcp://10.0.0.7:5600"))
 *     .build())) {
 *   ingester.awaitTermination();
 * }
 * }</pre>
 */
public final class Ingester implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Ingester.class);

  private final Shared shared;
  private final RedisConnector connector;
  private final PodDiscovery discovery;
  private final Coordinator coordinator;
  private final Reconciler reconciler;
  private final ScheduledThreadPoolExecutor scheduler;
  private final PrometheusMeterRegistry registry;
  private final HttpService http;
  private final CountDownLatch closed = new CountDownLatch(1);

  /** The JVM's heap after each collection, for the memory budget's operators (GC listeners). */
  private final JvmGcMetrics gcMetrics;

  private final JvmHeapPressureMetrics heapPressure;

  /** How often the routers' keys are read again for the key check, and its notes written. */
  static final Duration KEY_CHECK_REFRESH = Duration.ofSeconds(5);

  private volatile boolean running = true;

  private Ingester(
      IngesterConfig config,
      RedisConnector connector,
      PodDiscovery discovery,
      PrometheusMeterRegistry registry,
      FaultHook faults) {
    this.registry = registry;
    this.connector = connector;
    this.discovery = discovery;
    IngesterMetrics metrics = new IngesterMetrics(registry);
    PrefixIndex index = index(config, connector, faults);
    this.shared =
        new Shared(
            config,
            new ZContext(),
            index,
            metrics,
            faults,
            InstantSource.system(),
            System::nanoTime,
            new KeyChecks(
                config.keyCheckInterval(),
                index,
                metrics,
                System::nanoTime,
                InstantSource.system()));
    this.coordinator = new Coordinator(shared, discovery);
    this.reconciler = new Reconciler(shared, coordinator);
    coordinator.podReachability(reconciler::reachable);
    coordinator.engineSleepState(reconciler::asleep);
    shared
        .index()
        .addResetListener(
            (group, what) -> {
              coordinator.indexReset(group);
              reconciler.indexReset();
            });
    metrics.failedStreamsFrom(this::failedStreams);
    try {
      coordinator.registerAtStart();
    } catch (RuntimeException e) {
      reconciler.close();
      shared.index().close();
      shared.zmq().close();
      throw e;
    }
    metrics.memory(shared.memory());
    new JvmMemoryMetrics().bindTo(registry);
    this.gcMetrics = new JvmGcMetrics();
    gcMetrics.bindTo(registry);
    this.heapPressure = new JvmHeapPressureMetrics();
    heapPressure.bindTo(registry);
    this.scheduler = Threads.scheduled("kvindex-ingester-loop", 4);
    this.http = config.httpPort() < 0 ? null : http(config);
    schedule(coordinator::tick, config.coordinationInterval());
    schedule(coordinator::takeReleased, Coordinator.RELEASE_WATCH);
    schedule(reconciler::tick, config.reconcileInterval());
    schedule(new GarbageCollector(shared)::round, config.gcInterval());
    if (shared.keyChecks().enabled()) {
      schedule(this::refreshKeyChecks, KEY_CHECK_REFRESH);
    }
    log.info(
        "replica={}: ingester started (lease TTL {}, HTTP port {})",
        config.replicaId(),
        config.leaseTtl(),
        httpPort());
  }

  /**
   * Starts an ingester on Redis at {@link IngesterConfig#redisUri()} with pods from the config's
   * static list and discovery file, and from Kubernetes when {@link IngesterConfig#discovery()}
   * says so.
   */
  public static Ingester start(IngesterConfig config) {
    return start(config, FaultHook.NONE);
  }

  /**
   * Starts an ingester as {@link #start(IngesterConfig)} does, every write of its loops passing
   * through {@code faults} (tests and fault drills freeze a replica with it).
   */
  public static Ingester start(IngesterConfig config, FaultHook faults) {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    return start(config, discovery(config, registry), registry, faults);
  }

  /**
   * Starts an ingester with pods from {@code discovery}, its meters in {@code registry}, every
   * write of its loops passing through {@code faults}. The ingester closes {@code discovery} when
   * it stops (or fails to start).
   */
  public static Ingester start(
      IngesterConfig config,
      PodDiscovery discovery,
      PrometheusMeterRegistry registry,
      FaultHook faults) {
    Check.notNull(faults, "faults");
    RedisConnector connector;
    try {
      RedisConnector.Builder redis =
          RedisConnector.builder()
              .uri(config.redisUri())
              .commandTimeout(config.redisTimeout())
              .meterRegistry(registry);
      if (config.redisTlsCaFile() != null) {
        redis.tlsCaFile(config.redisTlsCaFile());
      }
      connector = redis.build();
    } catch (RuntimeException e) {
      discovery.close();
      throw e;
    }
    try {
      return new Ingester(config, connector, discovery, registry, faults);
    } catch (RuntimeException e) {
      connector.close();
      discovery.close();
      throw e;
    }
  }

  private static PrefixIndex index(
      IngesterConfig config, RedisConnector connector, FaultHook faults) {
    return indexBuilder(config).redis(connector).betweenChunks(faults::betweenChunks).build();
  }

  /** The index as this ingester writes it (tests read it the same way). */
  static PrefixIndexBuilder indexBuilder(IngesterConfig config) {
    return PrefixIndex.builder()
        .indexName(config.indexName())
        .groups(config.indexGroups())
        .podTtl(config.podLivenessTtl())
        .departedRetention(config.departedRetention())
        .applyChunkBlocks(config.applyChunkBlocks())
        .writePolicy(RetryPolicy.builder().totalBudget(config.redisRetryBudget()).build());
  }

  /** The static pods, then the discovery file's, then the Kubernetes pods if asked for. */
  static PodDiscovery discovery(IngesterConfig config, MeterRegistry registry) {
    List<PodDiscovery> sources = new ArrayList<>();
    sources.add(PodDiscovery.of(config.pods()));
    if (config.discoveryFile() != null) {
      sources.add(PodDiscovery.file(config.discoveryFile()));
    }
    if (config.discovery() == IngesterConfig.Discovery.KUBERNETES) {
      sources.add(PodDiscovery.kubernetes(config.kubernetes(), registry));
    }
    return PodDiscovery.union(sources);
  }

  /** The HTTP port serving /metrics, or -1 when HTTP is off. */
  public int httpPort() {
    return http == null ? -1 : http.address().getPort();
  }

  /** The Prometheus registry this ingester writes to. */
  public PrometheusMeterRegistry meterRegistry() {
    return registry;
  }

  /** Blocks until {@link #close()} is called. */
  public void awaitTermination() throws InterruptedException {
    closed.await();
  }

  /** Stops everything, releases this replica's leases and leaves the registry. Idempotent. */
  @Override
  public void close() {
    shutdown(false);
  }

  /**
   * Stops like a crash: leases and registration are left to expire, so the other replicas take over
   * only after the lease TTL. For tests and the demo's failure drill. Idempotent.
   */
  public void kill() {
    shutdown(true);
  }

  Map<StreamId, StreamWorker> workers() {
    return coordinator.workers();
  }

  IngesterMetrics metrics() {
    return shared.metrics();
  }

  /**
   * Ready, or the failing part by name ("redis unreachable", "stream pod-3/dp0 failed"), never an
   * exception's text: that may hold a URI with its password or other internals, and /readyz is
   * often open to more than the operators. The error itself is in the log.
   */
  Probe readiness() {
    List<String> failed =
        coordinator.workers().values().stream()
            .filter(w -> w.status().state() == StreamStatus.State.FAILED)
            .map(w -> "stream " + w.id() + " failed")
            .sorted()
            .toList();
    if (!running) {
      return Probe.failing("stopping");
    }
    if (coordinator.replicaConflict()) {
      return Probe.failing("replica id in use by another live ingester (the error is in the log)");
    }
    if (!coordinator.redisOk()) {
      return Probe.failing("redis unreachable (registry heartbeat late)");
    }
    Optional<String> stale = discovery.problem();
    if (stale.isPresent()) {
      return Probe.failing("discovery: " + stale.get());
    }
    if (!failed.isEmpty()) {
      return Probe.failing(String.join("; ", failed) + " (the errors are in the log)");
    }
    List<String> keys = shared.keyChecks().mismatches();
    return Probe.ok(
        "ready: "
            + coordinator.workers().size()
            + " streams, "
            + coordinator.liveReplicas()
            + " replicas"
            + (keys.isEmpty() ? "" : "; keys differ for " + String.join("; ", keys)));
  }

  /** The key check's refresh: the routers' keys read again, its notes written. */
  private void refreshKeyChecks() {
    try {
      shared.faults().beforeWrite();
      shared.keyChecks().refresh();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (!Thread.currentThread().isInterrupted()) {
        log.debug("the key check's refresh failed; it runs again shortly", e);
      }
    }
  }

  /** The key check, for tests. */
  KeyChecks keyChecks() {
    return shared.keyChecks();
  }

  private int failedStreams() {
    return (int)
        coordinator.workers().values().stream()
            .filter(w -> w.status().state() == StreamStatus.State.FAILED)
            .count();
  }

  private synchronized void shutdown(boolean crash) {
    if (!running) {
      return;
    }
    running = false;
    scheduler.shutdownNow();
    coordinator.stopWorkers(crash);
    shared.faults().release();
    try {
      scheduler.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    reconciler.close();
    coordinator.stopAll(crash, Duration.ofSeconds(10));
    if (http != null) {
      http.close();
    }
    shared.zmq().close();
    shared.index().close();
    connector.close();
    discovery.close();
    gcMetrics.close();
    heapPressure.close();
    closed.countDown();
    log.info(
        "replica={}: ingester stopped{}", shared.config().replicaId(), crash ? " (killed)" : "");
  }

  private HttpService http(IngesterConfig config) {
    try {
      return HttpService.builder("kvindex-ingester")
          .address(new InetSocketAddress(config.httpHost(), config.httpPort()))
          .threads(2)
          .readTimeout(config.httpReadTimeout())
          .idleTimeout(config.httpIdleTimeout())
          .metrics(registry::scrape)
          .health(() -> running ? Probe.ok("ok") : Probe.failing("stopping"))
          .ready(this::readiness)
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException(
          e.getMessage() + " (--http-port: 0 picks a free one, -1 turns HTTP off)", e);
    }
  }

  private void schedule(Runnable task, Duration every) {
    scheduler.scheduleWithFixedDelay(task, 0, every.toMillis(), TimeUnit.MILLISECONDS);
  }
}
