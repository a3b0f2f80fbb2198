package io.kvindex.ingester;

import io.kvindex.wire.KvEventDecoder;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
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
  private final Coordinator coordinator;
  private final Reconciler reconciler;
  private final ScheduledThreadPoolExecutor scheduler;
  private final PrometheusMeterRegistry registry;
  private final HttpEndpoints http;
  private final CountDownLatch closed = new CountDownLatch(1);
  private volatile boolean running = true;

  private Ingester(
      IngesterConfig config,
      IndexPort index,
      BatchDecoder decoder,
      PodDiscovery discovery,
      PrometheusMeterRegistry registry) {
    this.registry = registry;
    IngesterMetrics metrics = new IngesterMetrics(registry);
    this.shared =
        new Shared(
            config, new ZContext(), index, decoder, metrics, new Gate(), InstantSource.system());
    this.coordinator = new Coordinator(shared, discovery);
    this.reconciler = new Reconciler(shared, coordinator);
    coordinator.podReachability(reconciler::reachable);
    metrics.failedStreamsFrom(this::failedStreams);
    this.scheduler = scheduler();
    this.http = config.httpPort() < 0 ? null : http(config);
    schedule(coordinator::tick, config.coordinationInterval());
    schedule(reconciler::tick, config.reconcileInterval());
    schedule(this::collectGarbage, config.gcInterval());
    log.info(
        "replica={}: ingester started (lease TTL {}, HTTP port {})",
        config.replicaId(),
        config.leaseTtl(),
        httpPort());
  }

  /**
   * Starts an ingester on Redis at {@link IngesterConfig#redisUri()} with pods from the config's
   * static list and discovery file.
   */
  public static Ingester start(IngesterConfig config) {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    IndexPort index = RedisIndexPort.connect(config, registry);
    try {
      return start(config, index, KvEventDecoder::decode, discovery(config), registry);
    } catch (RuntimeException e) {
      index.close();
      throw e;
    }
  }

  static Ingester start(
      IngesterConfig config,
      IndexPort index,
      BatchDecoder decoder,
      PodDiscovery discovery,
      PrometheusMeterRegistry registry) {
    return new Ingester(config, index, decoder, discovery, registry);
  }

  static PodDiscovery discovery(IngesterConfig config) {
    List<PodDiscovery> sources = new ArrayList<>();
    sources.add(PodDiscovery.of(config.pods()));
    if (config.discoveryFile() != null) {
      sources.add(PodDiscovery.file(config.discoveryFile()));
    }
    return PodDiscovery.union(sources);
  }

  /** The HTTP port serving /metrics, or -1 when HTTP is off. */
  public int httpPort() {
    return http == null ? -1 : http.port();
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

  /** Freezes every loop of this replica in place, as a stopped process. For tests. */
  void pause() {
    shared.gate().close();
  }

  /** Lets a paused replica run again. */
  void resume() {
    shared.gate().open();
  }

  Map<StreamId, StreamWorker> workers() {
    return coordinator.workers();
  }

  IngesterMetrics metrics() {
    return shared.metrics();
  }

  HttpEndpoints.Status readiness() {
    List<String> failed =
        coordinator.workers().values().stream()
            .filter(w -> w.state() == StreamWorker.State.FAILED)
            .map(w -> w.id() + ": " + w.lastError())
            .sorted()
            .collect(Collectors.toList());
    if (!running) {
      return new HttpEndpoints.Status(false, "stopping\n");
    }
    if (!coordinator.redisOk()) {
      return new HttpEndpoints.Status(false, "redis: not reachable (registry heartbeat late)\n");
    }
    if (!failed.isEmpty()) {
      return new HttpEndpoints.Status(
          false, "failed streams:\n" + String.join("\n", failed) + "\n");
    }
    return new HttpEndpoints.Status(
        true,
        "ready: "
            + coordinator.workers().size()
            + " streams, "
            + coordinator.liveReplicas()
            + " replicas\n");
  }

  private int failedStreams() {
    return (int)
        coordinator.workers().values().stream()
            .filter(w -> w.state() == StreamWorker.State.FAILED)
            .count();
  }

  private void collectGarbage() {
    try {
      shared.gate().pass();
      shared.index().collectGarbage(shared.config().gcMaxSteps());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IndexPort.UnavailableException e) {
      shared.metrics().swallowed("gc");
    } catch (RuntimeException e) {
      shared.metrics().realError("gc");
      log.error("garbage collection step failed", e);
    }
  }

  private synchronized void shutdown(boolean crash) {
    if (!running) {
      return;
    }
    running = false;
    scheduler.shutdownNow();
    coordinator.stopWorkers(crash);
    shared.gate().open();
    try {
      scheduler.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    coordinator.stopAll(crash, Duration.ofSeconds(10));
    if (http != null) {
      http.close();
    }
    shared.zmq().close();
    shared.index().close();
    closed.countDown();
    log.info(
        "replica={}: ingester stopped{}", shared.config().replicaId(), crash ? " (killed)" : "");
  }

  private HttpEndpoints http(IngesterConfig config) {
    try {
      return new HttpEndpoints(
          config.httpHost(),
          config.httpPort(),
          registry::scrape,
          () -> new HttpEndpoints.Status(running, running ? "ok\n" : "stopping\n"),
          this::readiness);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot serve HTTP on "
              + config.httpHost()
              + ":"
              + config.httpPort()
              + "; choose another --http-port (0 picks a free one, -1 turns HTTP off)",
          e);
    }
  }

  /** Three named daemon threads for the three periodic loops; nothing else is ever queued. */
  private static ScheduledThreadPoolExecutor scheduler() {
    AtomicInteger n = new AtomicInteger();
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            3,
            r -> {
              Thread t = new Thread(r, "kvindex-ingester-loop-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  private void schedule(Runnable task, Duration every) {
    scheduler.scheduleWithFixedDelay(task, 0, every.toMillis(), TimeUnit.MILLISECONDS);
  }
}
