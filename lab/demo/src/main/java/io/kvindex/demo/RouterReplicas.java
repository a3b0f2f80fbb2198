package io.kvindex.demo;

import io.kvindex.epp.Candidates;
import io.kvindex.epp.Endpoint;
import io.kvindex.epp.EppConfig;
import io.kvindex.epp.EppServer;
import io.kvindex.router.KvRouter;
import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.http.ScoringServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The routing side of a {@link Stack}: router replicas behind their HTTP scoring servers, endpoint
 * pickers, and routers embedded as in a gateway's own process, each with its own Redis connections
 * and a registry counted with the others' ({@link RouterMeters}), all with the same settings. What
 * it starts it hands to the stack, which closes it. Not thread-safe: the stack's thread drives it.
 */
final class RouterReplicas {
  private final String redisUri;
  private final String indexName;
  private final PickPolicy pickPolicy;
  private final Duration resyncInterval;
  private final RouterMeters meters;
  private final Consumer<AutoCloseable> opened;
  private final List<URI> routers = new ArrayList<>();
  private final List<InetSocketAddress> pickers = new ArrayList<>();

  /**
   * Routers of the index {@code indexName} at {@code redisUri}.
   *
   * @param resyncInterval the closed loop's resync interval; zero when it is off
   * @param opened takes what is started, to be closed with the stack
   */
  RouterReplicas(
      String redisUri,
      String indexName,
      PickPolicy pickPolicy,
      Duration resyncInterval,
      RouterMeters meters,
      Consumer<AutoCloseable> opened) {
    this.redisUri = redisUri;
    this.indexName = indexName;
    this.pickPolicy = pickPolicy;
    this.resyncInterval = resyncInterval;
    this.meters = meters;
    this.opened = opened;
  }

  /** A router replica's settings, with its own registry counted with the routers'. */
  private KvRouterBuilder routerBuilder(PrometheusMeterRegistry registry) {
    return KvRouter.builder()
        .redisUri(redisUri)
        .indexName(indexName)
        .model(Stack.MODEL, Stack.modelKeys())
        .lookupBudget(Stack.LOOKUP_BUDGET)
        .resyncInterval(resyncInterval)
        .meterRegistry(registry);
  }

  /** A router replica behind its scoring server, on a free loopback port. */
  void startRouter() {
    PrometheusMeterRegistry registry = meters.newRegistry();
    KvRouter router = routerBuilder(registry).pickPolicy(pickPolicy).build();
    opened.accept(router);
    try {
      ScoringServer server =
          ScoringServer.start(router, registry, new InetSocketAddress("127.0.0.1", 0), 4);
      opened.accept(server);
      InetSocketAddress bound = server.address();
      routers.add(URI.create("http://127.0.0.1:" + bound.getPort()));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start a router on a free loopback port", e);
    }
  }

  /**
   * An endpoint picker replica (its own router, Redis connections and registry), whose candidates
   * are the pods' HTTP endpoints, the names the ingesters index.
   */
  void startPicker(List<Endpoint> endpoints) {
    PrometheusMeterRegistry registry = meters.newRegistry();
    KvRouter router = routerBuilder(registry).build();
    opened.accept(router);
    try {
      EppServer server =
          EppServer.start(
              EppConfig.builder()
                  .listen(new InetSocketAddress("127.0.0.1", 0))
                  .metricsListen(new InetSocketAddress("127.0.0.1", 0))
                  .models(Set.of(Stack.MODEL), false, Map.of())
                  .shutdownGrace(Duration.ofSeconds(1))
                  .build(),
              router,
              Candidates.of(endpoints),
              registry);
      opened.accept(server);
      pickers.add(server.address());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start an endpoint picker on a free loopback port", e);
    }
  }

  /**
   * A router embedded in a gateway: the replicas' settings, and a load view shared through the
   * index with every other router built with one ({@code KvRouterBuilder.sharedLoad}).
   */
  KvRouter embedded(String id) {
    KvRouter router =
        routerBuilder(meters.newRegistry())
            .pickPolicy(pickPolicy)
            .sharedLoad(true)
            .routerId(id)
            .build();
    opened.accept(router);
    return router;
  }

  /** The router replicas' scoring URIs. */
  List<URI> routers() {
    return List.copyOf(routers);
  }

  /** The endpoint pickers' gRPC addresses. */
  List<InetSocketAddress> pickers() {
    return List.copyOf(pickers);
  }
}
