package io.kvindex.epp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.kvindex.common.Threads;
import io.kvindex.router.KvRouter;
import io.kvindex.service.HttpService;
import io.kvindex.service.HttpService.Probe;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running picker: the ext_proc gRPC server (with gRPC health checking), the HTTP endpoint of
 * {@code /metrics}, {@code /healthz} and {@code /readyz}, the engines' scrapes, and what they
 * share. Thread-safe. Closing drains: the gRPC server stops taking streams (health says {@code
 * NOT_SERVING} first) and lets the open ones finish for up to the grace period.
 */
public final class EppServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EppServer.class);

  private final EppConfig config;
  private final Candidates candidates;
  private final EngineLoad engines;
  private final Server grpc;
  private final HttpService http;
  private final HealthStatusManager health;
  private final ThreadPoolExecutor executor;
  private final ScheduledExecutorService probes;
  private final KvRouter router;

  private EppServer(
      EppConfig config,
      KvRouter router,
      Candidates candidates,
      EngineLoad engines,
      Server grpc,
      HttpService http,
      HealthStatusManager health,
      ThreadPoolExecutor executor,
      ScheduledExecutorService probes) {
    this.config = config;
    this.router = router;
    this.candidates = candidates;
    this.engines = engines;
    this.grpc = grpc;
    this.http = http;
    this.health = health;
    this.executor = executor;
    this.probes = probes;
  }

  /**
   * Starts serving. The picker owns {@code candidates} and closes it; the caller closes {@code
   * router}.
   *
   * @throws IOException if an address cannot be bound
   */
  public static EppServer start(
      EppConfig config, KvRouter router, Candidates candidates, PrometheusMeterRegistry registry)
      throws IOException {
    ObjectMapper json = new ObjectMapper();
    EppMetrics metrics = new EppMetrics(registry);
    EngineLoad engines =
        config.scrapeInterval().isZero()
            ? null
            : EngineLoad.start(
                candidates, config.scrapeInterval(), config.scrapeTimeout(), registry);
    LoadBook loads =
        new LoadBook(
            engines,
            config.scrapeStaleness(),
            config.queueThreshold(),
            config.kvCacheThreshold(),
            config.waitingRequestTokens(),
            System::nanoTime);
    metrics.gauges(() -> candidates.endpoints().size(), loads::open);
    ThreadPoolExecutor executor =
        Threads.bounded(
            "kvindex-epp", config.threads(), 4096, new ThreadPoolExecutor.CallerRunsPolicy());
    EngineTokenizer tokenizer = new EngineTokenizer(config.tokenizeTimeout(), executor, json);
    Picker picker =
        new Picker(
            router,
            config.models(),
            loads,
            tokenizer,
            metrics,
            config.fallbacks(),
            config.routeTtl(),
            config.answeredRouteTtl(),
            executor);
    ProcessStream.Shared shared =
        new ProcessStream.Shared(
            picker,
            candidates,
            loads,
            router,
            metrics,
            json,
            config.assumedModes(),
            config.maxBodyBytes(),
            config.sheddableObjectives());
    HealthStatusManager health = new HealthStatusManager();
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(config.listen())
            // Streams are handled on the transport's own threads, never blocking them: a decision
            // that reads the index completes on the Redis client's thread, an engine's tokenizing
            // on the picker's executor (ProcessStream, Picker).
            .directExecutor()
            .maxInboundMessageSize(Math.max(4 << 20, config.maxBodyBytes() + (64 << 10)))
            .addService(health.getHealthService());
    ExtProcService service = new ExtProcService(shared);
    builder.addService(
        config.authToken() == null
            ? service.bindService()
            : ServerInterceptors.intercept(service, new BearerCheck(config.authToken())));
    Server grpc;
    try {
      grpc = builder.build().start();
    } catch (IOException e) {
      executor.shutdownNow();
      if (engines != null) {
        engines.close();
      }
      throw new IOException(
          "cannot serve gRPC on "
              + config.listen()
              + " ("
              + e.getMessage()
              + "); choose another"
              + " --listen",
          e);
    }
    ScheduledExecutorService probes = Threads.scheduled("kvindex-epp-health", 1);
    EppServer[] self = new EppServer[1];
    HttpService http;
    try {
      http =
          HttpService.builder("kvindex-epp")
              .address(config.metricsListen())
              .metrics(registry::scrape)
              .ready(() -> self[0].readiness())
              .start();
    } catch (IOException e) {
      grpc.shutdownNow();
      executor.shutdownNow();
      probes.shutdownNow();
      throw e;
    }
    self[0] =
        new EppServer(config, router, candidates, engines, grpc, http, health, executor, probes);
    self[0].refreshHealth();
    probes.scheduleWithFixedDelay(self[0]::refreshHealth, 1, 1, TimeUnit.SECONDS);
    return self[0];
  }

  /** The gRPC address (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return new InetSocketAddress(config.listen().getAddress(), grpc.getPort());
  }

  /** The HTTP address of {@code /metrics}, {@code /healthz} and {@code /readyz}. */
  public InetSocketAddress metricsAddress() {
    return http.address();
  }

  private Probe readiness() {
    Optional<String> problem = candidates.problem();
    if (problem.isPresent()) {
      return Probe.failing("not ready: " + problem.get());
    }
    int n = candidates.endpoints().size();
    String index = router.indexReachable() ? "" : "; Redis does not answer: picking by load";
    return Probe.ok("ready: " + n + " candidate endpoints" + index);
  }

  private void refreshHealth() {
    try {
      ServingStatus ready =
          candidates.problem().isEmpty() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
      health.setStatus("", ready);
      health.setStatus("liveness", ServingStatus.SERVING);
      health.setStatus("readiness", ready);
      health.setStatus(ExternalProcessorGrpc.SERVICE_NAME, ready);
    } catch (RuntimeException e) {
      log.warn("health: refreshing the serving status failed", e);
    }
  }

  /** Stops taking streams and lets the open ones finish for up to {@code grace}, then ends them. */
  public void close(Duration grace) {
    probes.shutdownNow();
    health.enterTerminalState();
    grpc.shutdown();
    try {
      if (!grpc.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn("shutdown: streams still open after {}; ending them", grace);
        grpc.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      grpc.shutdownNow();
    }
    http.close();
    if (engines != null) {
      engines.close();
    }
    candidates.close();
    executor.shutdownNow();
  }

  @Override
  public void close() {
    close(config.shutdownGrace());
  }
}
