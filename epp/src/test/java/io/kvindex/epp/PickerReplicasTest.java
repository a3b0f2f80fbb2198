package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Several picker replicas behind one gateway, each seeing only the streams the proxy opens to it:
 * what one knows of the others' requests. The index and the speculative routes of their picks are
 * shared through Redis; the load is shared as the reference picker shares it between active
 * replicas, through the engines' own figures (waiting and running requests on their {@code
 * /metrics}), which count every replica's requests.
 */
@UsesRedis
class PickerReplicasTest {
  private static final String MODEL = ExtProcProtocolTest.MODEL;
  private static final Proxy.Mode FULL_DUPLEX = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);

  @Test
  void replica_seesTheOtherReplicasRequestsInTheEnginesFigures(@Fresh RedisStandalone redis)
      throws Exception {
    String uri = redis.uri().toURI().toString();
    liveInTheIndex(uri, List.of("pod-x", "pod-y"));
    try (Engine x = Engine.start("pod-x");
        Engine y = Engine.start("pod-y");
        KvRouter routerA = router(uri);
        KvRouter routerB = router(uri)) {
      List<Endpoint> endpoints = List.of(x.endpoint, y.endpoint);
      PrometheusMeterRegistry registryA = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      PrometheusMeterRegistry registryB = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      // No speculative routes here: where a prompt goes is decided by the load alone.
      try (EppServer a =
              replica(routerA, endpoints, registryA, Duration.ofMillis(20), Duration.ZERO);
          EppServer b =
              replica(routerB, endpoints, registryB, Duration.ofMillis(20), Duration.ZERO);
          Proxy toA = new Proxy(a.address(), null);
          Proxy toB = new Proxy(b.address(), null)) {
        byte[] prompt = ExtProcProtocolTest.completion(64, 41);
        // Both engines idle: where replica B sends the prompt (by its tie-break).
        String first = toB.pick(prompt, null);
        Engine busy = first.equals(x.endpoint.address()) ? x : y;
        Engine idle = busy == x ? y : x;

        // Replica A sends 20 requests to that engine and keeps them open; the engine runs them.
        List<ProxyStream> open = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          ProxyStream s = toA.open();
          open.add(s);
          String only = busy.endpoint.address();
          assertThat(toA.pick(s, ExtProcProtocolTest.completion(64, 100 + i), only))
              .isEqualTo(only);
        }
        busy.running.set(open.size());
        assertThat(gauge(registryA, "kvindex_epp_in_flight")).isEqualTo(20);

        assertThat(Await.until(() -> toB.pick(prompt, null).equals(idle.endpoint.address())))
            .as("replica B, with none of its own requests open, sees A's on the busy engine")
            .isTrue();
        assertThat(Await.until(() -> gauge(registryB, "kvindex_epp_in_flight") == 0)).isTrue();

        // A's requests end there and as many run on the other engine: B follows.
        open.forEach(ProxyStream::cancel);
        busy.running.set(0);
        idle.running.set(20);
        assertThat(Await.until(() -> toB.pick(prompt, null).equals(busy.endpoint.address())))
            .as("B follows the engines' figures, not where it sent the prompt before")
            .isTrue();
        assertThat(Await.until(() -> gauge(registryA, "kvindex_epp_in_flight") == 0)).isTrue();
      }
    }
  }

  @Test
  void replica_sendsAPromptWhereAnotherReplicaJustSentIt(@Fresh RedisStandalone redis)
      throws Exception {
    String uri = redis.uri().toURI().toString();
    List<Endpoint> endpoints =
        List.of(Endpoint.of("pod-a", "127.0.0.11", 8000), Endpoint.of("pod-b", "127.0.0.12", 8000));
    liveInTheIndex(uri, List.of("pod-a", "pod-b"));
    try (KvRouter routerA = router(uri);
        KvRouter routerB = router(uri);
        EppServer a =
            replica(
                routerA,
                endpoints,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                Duration.ZERO,
                Duration.ofSeconds(60));
        EppServer b =
            replica(
                routerB,
                endpoints,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                Duration.ZERO,
                Duration.ofSeconds(60));
        Proxy toA = new Proxy(a.address(), null);
        Proxy toB = new Proxy(b.address(), null);
        ProxyStream heldOnB = toB.open()) {
      Endpoint target = endpoints.get(0);
      Endpoint other = endpoints.get(1);
      // Replica B has a request of its own open on the target: by load alone it goes elsewhere.
      assertThat(toB.pick(heldOnB, ExtProcProtocolTest.completion(64, 7), target.address()))
          .isEqualTo(target.address());
      assertThat(toB.pick(ExtProcProtocolTest.completion(64, 8), null))
          .as("a prompt nobody holds goes to the less loaded endpoint")
          .isEqualTo(other.address());

      // Replica A sends a new prompt to the target; its route reaches the index. The prompt is
      // long enough that its cached prefix outweighs B's one open request there under the
      // default policy (estimated time to first token).
      int seed = 9;
      byte[] prompt = ExtProcProtocolTest.completion(1024, seed);
      assertThat(toA.pick(prompt, target.address())).isEqualTo(target.address());
      int[] tokens = tokens(prompt);
      assertThat(
              Await.until(
                  () -> {
                    PodMatch m =
                        routerB
                            .score(MODEL, null, tokens, List.of("pod-a", "pod-b"))
                            .pod(target.pod())
                            .orElseThrow();
                    return m.speculative() && m.depth() > 0;
                  }))
          .isTrue();

      assertThat(toB.pick(prompt, null))
          .as("replica B follows A's route, though the target is the more loaded for B")
          .isEqualTo(target.address());
    }
  }

  /** The pick of a request on a stream of its own (ended after), optionally from one endpoint. */
  @Test
  void withTheSharedLoadView_aReplicaSeesTheOthersOpenRequests_withoutTheEnginesFigures(
      @Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    List<Endpoint> endpoints =
        List.of(Endpoint.of("pod-a", "127.0.0.11", 8000), Endpoint.of("pod-b", "127.0.0.12", 8000));
    liveInTheIndex(uri, List.of("pod-a", "pod-b"));
    try (KvRouter routerA = sharing(uri, "replica-a");
        KvRouter routerB = sharing(uri, "replica-b");
        // No scraping and no routes: what B knows of A's requests is the shared view alone.
        EppServer a =
            replica(
                routerA,
                endpoints,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                Duration.ZERO,
                Duration.ZERO);
        EppServer b =
            replica(
                routerB,
                endpoints,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                Duration.ZERO,
                Duration.ZERO);
        Proxy toA = new Proxy(a.address(), null);
        Proxy toB = new Proxy(b.address(), null)) {
      byte[] prompt = ExtProcProtocolTest.completion(64, 51);
      String first = toB.pick(prompt, null);
      String other =
          first.equals(endpoints.get(0).address())
              ? endpoints.get(1).address()
              : endpoints.get(0).address();

      List<ProxyStream> open = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        ProxyStream s = toA.open();
        open.add(s);
        assertThat(toA.pick(s, ExtProcProtocolTest.completion(64, 200 + i), first))
            .isEqualTo(first);
      }
      assertThat(Await.until(() -> toB.pick(prompt, null).equals(other)))
          .as("replica B sees A's 20 open requests where it sent the prompt before")
          .isTrue();

      open.forEach(ProxyStream::cancel);
      assertThat(Await.until(() -> toB.pick(prompt, null).equals(first)))
          .as("their streams ended: they leave the view")
          .isTrue();
    }
  }

  private static KvRouter sharing(String uri, String id) {
    return KvRouter.builder()
        .redisUri(uri)
        .indexName("epp")
        .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
        .lookupBudget(Duration.ofMillis(500))
        .sharedLoad(true)
        .routerId(id)
        .meterRegistry(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
        .build();
  }

  private static EppServer replica(
      KvRouter router,
      List<Endpoint> endpoints,
      PrometheusMeterRegistry registry,
      Duration scrapeInterval,
      Duration routeTtl)
      throws IOException {
    return EppServer.start(
        ExtProcProtocolTest.config()
            .scrapeInterval(scrapeInterval)
            .routeTtl(routeTtl)
            .answeredRouteTtl(routeTtl)
            .build(),
        router,
        Candidates.of(endpoints),
        registry);
  }

  private static KvRouter router(String uri) {
    return KvRouter.builder()
        .redisUri(uri)
        .indexName("epp")
        .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
        .lookupBudget(Duration.ofMillis(500))
        .meterRegistry(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
        .build();
  }

  /** The pods live in the index, as their ingester makes them (a route needs a live pod). */
  private static void liveInTheIndex(String uri, List<String> pods) {
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      for (String pod : pods) {
        StreamId stream = StreamId.of(MODEL, pod);
        Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
        index.apply(
            stream,
            KeyMode.ENGINE,
            1,
            lease,
            KvEventBatch.of(0, List.of(BlockStored.of(List.of(7L), null, List.of(), 16)), 0));
      }
    }
  }

  private static int[] tokens(byte[] completion) throws IOException {
    com.fasterxml.jackson.databind.ObjectMapper json =
        new com.fasterxml.jackson.databind.ObjectMapper();
    return json.convertValue(json.readTree(completion).path("prompt"), int[].class);
  }

  private static double gauge(PrometheusMeterRegistry registry, String name) {
    for (String line : registry.scrape().split("\n")) {
      if (line.startsWith(name + " ")) {
        return Double.parseDouble(line.substring(name.length() + 1));
      }
    }
    return Double.NaN;
  }

  /**
   * An engine's {@code /metrics} as vLLM serves it (requests running and waiting, KV cache usage),
   * over a real socket: the requests it runs are the ones the test has it run.
   */
  private static final class Engine implements AutoCloseable {
    final AtomicInteger running = new AtomicInteger();
    final HttpServer http;
    final Endpoint endpoint;

    private Engine(String pod, HttpServer http) {
      this.http = http;
      this.endpoint = Endpoint.of(pod, "127.0.0.1", http.getAddress().getPort());
    }

    static Engine start(String pod) throws IOException {
      HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      Engine engine = new Engine(pod, http);
      http.createContext(
          "/metrics",
          exchange -> {
            byte[] page =
                ("# TYPE vllm:num_requests_running gauge\n"
                        + "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} "
                        + engine.running.get()
                        + ".0\n"
                        + "# TYPE vllm:num_requests_waiting gauge\n"
                        + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0.0\n"
                        + "# TYPE vllm:kv_cache_usage_perc gauge\n"
                        + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.1\n")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, page.length);
            try (OutputStream out = exchange.getResponseBody()) {
              out.write(page);
            }
          });
      http.start();
      return engine;
    }

    @Override
    public void close() {
      http.stop(0);
    }
  }
}
