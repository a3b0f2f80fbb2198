package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The pick's speculative route: once the picker has answered with a pick, the index credits the
 * picked pod with the prompt (flagged speculative) before its engine reports a block, so that the
 * next request of the same prefix goes there too.
 */
@UsesRedis
class SpeculativeRouteTest {
  private static final String MODEL = ExtProcProtocolTest.MODEL;
  private static final List<Endpoint> ENDPOINTS =
      List.of(Endpoint.of("pod-a", "127.0.0.11", 8000), Endpoint.of("pod-b", "127.0.0.12", 8000));

  @Test
  void pick_isRecordedAsASpeculativeRouteOfThePickedPod(@Fresh RedisStandalone redis)
      throws Exception {
    String uri = redis.uri().toURI().toString();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      // Both pods live in the index, as their ingester makes them (a route needs a live pod).
      for (Endpoint e : ENDPOINTS) {
        StreamId stream = StreamId.of(MODEL, e.pod());
        Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
        index.apply(
            stream,
            KeyMode.ENGINE,
            1,
            lease,
            KvEventBatch.of(0, List.of(BlockStored.of(List.of(7L), null, List.of(), 16)), 0));
      }
      try (KvRouter router =
              KvRouter.builder()
                  .redisUri(uri)
                  .indexName("epp")
                  .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
                  .lookupBudget(Duration.ofMillis(500))
                  .meterRegistry(registry)
                  .build();
          EppServer server =
              EppServer.start(
                  ExtProcProtocolTest.config().routeTtl(Duration.ofSeconds(30)).build(),
                  router,
                  Candidates.of(ENDPOINTS),
                  registry);
          Proxy proxy = new Proxy(server.address(), null)) {
        int[] tokens = IntStream.range(0, 512).map(i -> (i * 7919 + 31) % 50000).toArray();
        byte[] body =
            ("{\"model\":\""
                    + MODEL
                    + "\",\"prompt\":"
                    + java.util.Arrays.toString(tokens).replace(" ", "")
                    + ",\"max_tokens\":4}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        String picked;
        try (ProxyStream s = proxy.open()) {
          Proxy.Routed routed =
              proxy.request(
                  s,
                  Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
                  new Proxy.HttpRequest("/v1/completions", Map.of(), body, null),
                  1);
          assertThat(routed.immediateStatus()).isZero();
          String address = routed.endpoints().get(0);
          picked =
              ENDPOINTS.stream()
                  .filter(e -> e.address().equals(address))
                  .findFirst()
                  .orElseThrow()
                  .pod();
        }
        String other = picked.equals("pod-a") ? "pod-b" : "pod-a";
        List<String> pods = List.of("pod-a", "pod-b");

        assertThat(
                Await.until(
                    () -> {
                      PodMatch m =
                          router.score(MODEL, null, tokens, pods).pod(picked).orElseThrow();
                      return m.speculative() && m.depth() > 0;
                    }))
            .as("the picked pod holds the prompt speculatively once the pick is answered")
            .isTrue();
        assertThat(router.score(MODEL, null, tokens, pods).pod(other).orElseThrow().depth())
            .as("the other pod holds nothing of it")
            .isZero();
      }
    }
  }

  /** What a route test works with: the index, a router reading it, a picker and its proxy. */
  private record Rig(KvRouter router, EppServer server, Proxy proxy) implements AutoCloseable {
    @Override
    public void close() {
      proxy.close();
      server.close();
      router.close();
    }
  }

  /**
   * Both pods live in the index; a picker whose picks last 60 s, {@code answered} once answered.
   */
  private static Rig rig(RedisStandalone redis, Duration answered) throws Exception {
    String uri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      for (Endpoint e : ENDPOINTS) {
        StreamId stream = StreamId.of(MODEL, e.pod());
        Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
        index.apply(
            stream,
            KeyMode.ENGINE,
            1,
            lease,
            KvEventBatch.of(0, List.of(BlockStored.of(List.of(7L), null, List.of(), 16)), 0));
      }
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    KvRouter router =
        KvRouter.builder()
            .redisUri(uri)
            .indexName("epp")
            .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
            .lookupBudget(Duration.ofMillis(500))
            .meterRegistry(registry)
            .build();
    EppServer server =
        EppServer.start(
            ExtProcProtocolTest.config()
                .routeTtl(Duration.ofSeconds(60))
                .answeredRouteTtl(answered)
                .build(),
            router,
            Candidates.of(ENDPOINTS),
            registry);
    return new Rig(router, server, new Proxy(server.address(), null));
  }

  private static final int[] TOKENS =
      IntStream.range(0, 256).map(i -> (i * 7907 + 17) % 50000).toArray();

  private static final Proxy.HttpRequest REQUEST =
      new Proxy.HttpRequest(
          "/v1/completions",
          Map.of(),
          ("{\"model\":\""
                  + MODEL
                  + "\",\"prompt\":"
                  + java.util.Arrays.toString(TOKENS).replace(" ", "")
                  + ",\"max_tokens\":4}")
              .getBytes(java.nio.charset.StandardCharsets.UTF_8),
          null);

  private static final Proxy.Mode FULL_DUPLEX = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);

  private static String pod(String address) {
    return ENDPOINTS.stream()
        .filter(e -> e.address().equals(address))
        .findFirst()
        .orElseThrow()
        .pod();
  }

  /** The pod's speculative depth for the test's prompt. */
  private static int routed(KvRouter router, String pod) {
    PodMatch m =
        router.score(MODEL, null, TOKENS, List.of("pod-a", "pod-b")).pod(pod).orElseThrow();
    return m.speculative() ? m.depth() : 0;
  }

  @Test
  void answeredRequest_routeEndsOnceTheEnginesEventsHadTimeToCome(@Fresh RedisStandalone redis)
      throws Exception {
    try (Rig rig = rig(redis, Duration.ofMillis(200));
        ProxyStream s = rig.proxy().open()) {
      Proxy.Routed r = rig.proxy().request(s, FULL_DUPLEX, REQUEST, 1);
      String picked = pod(r.endpoints().get(0));
      assertThat(Await.until(() -> routed(rig.router(), picked) > 0)).isTrue();

      rig.proxy()
          .response(
              s,
              FULL_DUPLEX,
              new Proxy.HttpResponse(200, "text/event-stream", ExtProcProtocolTest.SSE),
              r.endpoints().get(0),
              1);

      assertThat(Await.until(() -> routed(rig.router(), picked) == 0))
          .as(
              "answered, the route lasts the answered TTL (200 ms), not the route TTL (60 s):"
                  + " the engine's own entries count from then on, its evictions included")
          .isTrue();
    }
  }

  @Test
  void servedByAnotherPod_routeMovesThere(@Fresh RedisStandalone redis) throws Exception {
    try (Rig rig = rig(redis, Duration.ofSeconds(30));
        ProxyStream s = rig.proxy().open()) {
      Proxy.Routed r = rig.proxy().request(s, FULL_DUPLEX, REQUEST, 1);
      String picked = pod(r.endpoints().get(0));
      String fallback = pod(r.endpoints().get(1));
      assertThat(Await.until(() -> routed(rig.router(), picked) > 0)).isTrue();

      rig.proxy()
          .response(
              s,
              FULL_DUPLEX,
              new Proxy.HttpResponse(200, "text/event-stream", ExtProcProtocolTest.SSE),
              r.endpoints().get(1),
              1);

      assertThat(
              Await.until(
                  () -> routed(rig.router(), picked) == 0 && routed(rig.router(), fallback) > 0))
          .as("the pod that served it holds the prompt, the pick does not")
          .isTrue();
    }
  }

  @Test
  void failedOrCancelled_routeIsTakenBack(@Fresh RedisStandalone redis) throws Exception {
    try (Rig rig = rig(redis, Duration.ofSeconds(30))) {
      try (ProxyStream s = rig.proxy().open()) {
        Proxy.Routed r = rig.proxy().request(s, FULL_DUPLEX, REQUEST, 1);
        String picked = pod(r.endpoints().get(0));
        assertThat(Await.until(() -> routed(rig.router(), picked) > 0)).isTrue();

        rig.proxy()
            .response(
                s,
                FULL_DUPLEX,
                new Proxy.HttpResponse(503, "text/plain", "busy".getBytes()),
                r.endpoints().get(0),
                1);

        assertThat(Await.until(() -> routed(rig.router(), picked) == 0))
            .as("an engine that failed the request computed nothing")
            .isTrue();
      }
      try (ProxyStream s = rig.proxy().open()) {
        Proxy.Routed r = rig.proxy().request(s, FULL_DUPLEX, REQUEST, 1);
        String picked = pod(r.endpoints().get(0));
        assertThat(Await.until(() -> routed(rig.router(), picked) > 0)).isTrue();

        s.cancel();

        assertThat(Await.until(() -> routed(rig.router(), picked) == 0))
            .as("a request dropped before its response may never reach the engine")
            .isTrue();
      }
    }
  }
}
