package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
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
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The picker against a proxy that speaks ext_proc exactly as Envoy's filter does, over a real gRPC
 * socket: each body mode, the pick in the header and the metadata, the candidate subset, refusals,
 * the served-endpoint report and a stream closed midway. The endpoints are addresses nobody serves:
 * the protocol is all that is tested here (the end-to-end test forwards to real pods).
 */
@UsesRedis
class ExtProcProtocolTest {
  static final String MODEL = "org/model";
  static final List<Endpoint> ENDPOINTS =
      List.of(
          Endpoint.of("pod-a", "127.0.0.11", 8000),
          Endpoint.of("pod-b", "127.0.0.12", 8000),
          Endpoint.of("pod-c", "127.0.0.13", 8000),
          Endpoint.of("pod-d", "127.0.0.14", 8000));

  private static KvRouter router;
  private static PrometheusMeterRegistry registry;
  private static EppServer server;
  private static Proxy proxy;

  @BeforeAll
  static void start(@Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(uri)) {
      PrefixIndex.builder().indexName("epp").redis(connector).build().close(); // an ingester's
    }
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    router =
        KvRouter.builder()
            .redisUri(uri)
            .indexName("epp")
            .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
            .lookupBudget(Duration.ofMillis(500))
            .meterRegistry(registry)
            .build();
    server = start(config().maxBodyBytes(1 << 20), Candidates.of(ENDPOINTS), registry);
    proxy = new Proxy(server.address(), null);
  }

  static EppConfig.Builder config() {
    return EppConfig.builder()
        .listen(new InetSocketAddress("127.0.0.1", 0))
        .metricsListen(new InetSocketAddress("127.0.0.1", 0))
        .scrapeInterval(Duration.ZERO)
        .shutdownGrace(Duration.ofSeconds(5))
        .models(Set.of(MODEL), false, Map.of("org/model-sql", MODEL));
  }

  static EppServer start(
      EppConfig.Builder config, Candidates candidates, PrometheusMeterRegistry registry)
      throws Exception {
    return EppServer.start(config.build(), router, candidates, registry);
  }

  @AfterAll
  static void stop() {
    proxy.close();
    server.close();
    router.close();
  }

  static byte[] completion(int tokens, int seed) {
    String ids =
        IntStream.range(0, tokens)
            .mapToObj(i -> Integer.toString((i * 7919 + seed * 104729) % 50000))
            .collect(Collectors.joining(","));
    return ("{\"model\":\"" + MODEL + "\",\"prompt\":[" + ids + "],\"max_tokens\":4}")
        .getBytes(StandardCharsets.UTF_8);
  }

  static Proxy.HttpRequest post(byte[] body) {
    return new Proxy.HttpRequest("/v1/completions", Map.of(), body, null);
  }

  static final byte[] SSE =
      ("data: {\"choices\":[{\"text\":\"a\"}],\"usage\":null}\n\n"
              + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4096,\"completion_tokens\":4,"
              + "\"total_tokens\":4100,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
              + "data: [DONE]\n\n")
          .getBytes(StandardCharsets.UTF_8);

  @ParameterizedTest
  @EnumSource(
      value = BodySendMode.class,
      names = {"FULL_DUPLEX_STREAMED", "BUFFERED", "STREAMED", "NONE"})
  void process_eachBodyMode_picksOnceAndPassesTheBodyOn(BodySendMode mode) {
    byte[] body = completion(4096, 1);
    Proxy.Mode m = Proxy.Mode.of(mode);
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed = proxy.request(s, m, post(body), 5);

      assertThat(routed.immediateStatus()).isZero();
      assertThat(routed.endpoints()).hasSize(3).doesNotHaveDuplicates();
      assertThat(ENDPOINTS.stream().map(Endpoint::address)).containsAll(routed.endpoints());
      assertThat(routed.destinationMetadata())
          .as("the header and the envoy.lb metadata carry the same list")
          .isEqualTo(routed.destinationHeader());
      assertThat(routed.routeCacheCleared()).isTrue();
      if (mode != BodySendMode.NONE) {
        assertThat(routed.bodyPassedOn()).isEqualTo(body);
      }
      byte[] back =
          proxy.response(
              s,
              m,
              new Proxy.HttpResponse(200, "text/event-stream", SSE),
              routed.endpoints().get(0),
              3);
      assertThat(back).isEqualTo(SSE);
      s.halfClose();
      assertThat(s.end()).as("the picker completes the stream").isNull();
    }
  }

  @Test
  void process_bodyLargerThanAChunk_comesBackWhole() {
    byte[] body = completion(40_000, 2);
    assertThat(body.length).isGreaterThan(2 * Messages.CHUNK_BYTES);
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(s, Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED), post(body), 7);

      assertThat(routed.bodyPassedOn()).isEqualTo(body);
    }
  }

  @Test
  void process_withoutProtocolConfig_assumesFullDuplex() {
    byte[] body = completion(64, 3);
    Proxy.Mode m =
        new Proxy.Mode(BodySendMode.FULL_DUPLEX_STREAMED, BodySendMode.FULL_DUPLEX_STREAMED, false);
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed = proxy.request(s, m, post(body), 2);

      assertThat(routed.bodyPassedOn()).isEqualTo(body);
      assertThat(routed.endpoints()).hasSize(3);
    }
  }

  @Test
  void process_requestWithoutBody_isPickedAtItsHeaders() {
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(
              s,
              Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
              new Proxy.HttpRequest("/v1/models", Map.of(), null, null),
              1);

      assertThat(routed.endpoints()).hasSize(3);
    }
  }

  @Test
  void process_subset_picksOnlyFromIt() {
    String only = ENDPOINTS.get(2).address();
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(
              s,
              Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
              new Proxy.HttpRequest("/v1/completions", Map.of(), completion(64, 4), List.of(only)),
              2);

      assertThat(routed.endpoints()).containsExactly(only);
    }
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(
              s,
              Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
              new Proxy.HttpRequest(
                  "/v1/completions",
                  Map.of(),
                  completion(64, 4),
                  List.of("127.0.0.11", "127.0.0.12:8000")),
              2);

      assertThat(routed.endpoints())
          .as("a bare IP admits its pod's ports")
          .containsExactlyInAnyOrder("127.0.0.11:8000", "127.0.0.12:8000");
    }
  }

  @Test
  void process_subsetEmptyOrUnknown_isAnswered503() {
    for (List<String> subset : List.of(List.<String>of(), List.of("10.9.9.9:8000"))) {
      try (ProxyStream s = proxy.open()) {
        Proxy.Routed routed =
            proxy.request(
                s,
                Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
                new Proxy.HttpRequest("/v1/completions", Map.of(), completion(16, 5), subset),
                1);

        assertThat(routed.immediateStatus()).as("subset %s", subset).isEqualTo(503);
        assertThat(s.end()).isNull();
      }
    }
  }

  @Test
  void process_noReadyEndpoint_isAnswered503() throws Exception {
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (EppServer empty = start(config(), Candidates.of(List.of()), own);
        Proxy p = new Proxy(empty.address(), null);
        ProxyStream s = p.open()) {
      Proxy.Routed routed =
          p.request(s, Proxy.Mode.of(BodySendMode.BUFFERED), post(completion(16, 6)), 1);

      assertThat(routed.immediateStatus()).isEqualTo(503);
      assertThat(own.scrape()).contains("kvindex_epp_refusals_total{status=\"503\"} 1.0");
    }
  }

  @Test
  void process_sheddableWhileSaturated_isAnswered429() throws Exception {
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // Nobody serves the endpoints' /metrics: their load is unknown, which counts as saturated.
    EppConfig.Builder shedding =
        config()
            .scrapeInterval(Duration.ofMillis(50))
            .scrapeTimeout(Duration.ofMillis(100))
            .sheddableObjectives(Set.of("batch"));
    try (EppServer saturated = start(shedding, Candidates.of(ENDPOINTS), own);
        Proxy p = new Proxy(saturated.address(), null)) {
      Proxy.Mode m = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);
      try (ProxyStream s = p.open()) {
        Proxy.Routed shed =
            p.request(
                s,
                m,
                new Proxy.HttpRequest(
                    "/v1/completions",
                    Map.of("x-gateway-inference-objective", "batch"),
                    completion(16, 7),
                    null),
                1);
        assertThat(shed.immediateStatus()).isEqualTo(429);
      }
      try (ProxyStream s = p.open()) {
        Proxy.Routed kept = p.request(s, m, post(completion(16, 7)), 1);
        assertThat(kept.immediateStatus()).as("a request that is not sheddable").isZero();
      }
    }
  }

  @Test
  void process_bodyOverTheLimit_isAnswered413() {
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(
              s,
              Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED),
              post(completion(200_000, 8)),
              30);

      assertThat(routed.immediateStatus()).isEqualTo(413);
      assertThat(routed.immediateBody()).contains("max-body-bytes");
    }
  }

  @Test
  void process_closedMidway_releasesTheEndpoint() {
    assertThat(Await.until(() -> gauge("kvindex_epp_in_flight") == 0))
        .as("the streams of earlier tests have ended")
        .isTrue();
    double before = 0;
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(
              s, Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED), post(completion(32, 9)), 1);
      assertThat(routed.immediateStatus()).isZero();
      assertThat(gauge("kvindex_epp_in_flight")).isEqualTo(before + 1);

      s.cancel();

      assertThat(Await.until(() -> gauge("kvindex_epp_in_flight") == before))
          .as("the request no longer counts once its stream is gone")
          .isTrue();
      assertThat(registry.scrape())
          .contains("kvindex_epp_streams_total{outcome=\"cancelled\"}")
          .contains("kvindex_epp_observations_total{outcome=\"stream_closed\"}");
    }
  }

  @Test
  void process_servedByAFallback_countsThere() {
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed = proxy.request(s, m, post(completion(32, 10)), 1);
      String fallback = routed.endpoints().get(1);

      proxy.response(s, m, new Proxy.HttpResponse(200, "text/event-stream", SSE), fallback, 1);
      s.halfClose();
      assertThat(s.end()).isNull();
    }
    assertThat(registry.scrape()).contains("kvindex_epp_served_total{endpoint=\"fallback\"}");
  }

  @Test
  void process_unreadableRequests_arePickedByLoadAndCounted() {
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);
    Map<String, byte[]> bodies =
        Map.of(
            "unparseable", "{not json".getBytes(StandardCharsets.UTF_8),
            "unknown_model",
                "{\"model\":\"other\",\"prompt\":[1,2,3]}".getBytes(StandardCharsets.UTF_8),
            "no_prompt", ("{\"model\":\"" + MODEL + "\"}").getBytes(StandardCharsets.UTF_8));
    bodies.forEach(
        (reason, body) -> {
          try (ProxyStream s = proxy.open()) {
            Proxy.Routed routed = proxy.request(s, m, post(body), 1);
            assertThat(routed.endpoints()).as(reason).hasSize(3);
            assertThat(routed.bodyPassedOn()).isEqualTo(body);
          }
          assertThat(registry.scrape())
              .contains("kvindex_epp_unscored_total{reason=\"" + reason + "\"}");
        });
  }

  @Test
  void health_answersTheProtocolsServices() {
    HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(proxy.channel());
    for (String service :
        List.of("", "liveness", "readiness", ExternalProcessorGrpc.SERVICE_NAME)) {
      assertThat(
              health.check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus())
          .as("service '%s'", service)
          .isEqualTo(ServingStatus.SERVING);
    }
  }

  @Test
  void process_withAToken_refusesStreamsWithoutIt() throws Exception {
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (EppServer guarded = start(config().authToken("s3cret"), Candidates.of(ENDPOINTS), own);
        Proxy without = new Proxy(guarded.address(), null);
        Proxy with = new Proxy(guarded.address(), "s3cret")) {
      try (ProxyStream s = without.open()) {
        s.send(
            Proxy.requestHeaders(Proxy.Mode.of(BodySendMode.NONE), post(completion(4, 11)), true));
        Status status = s.end();
        assertThat(status).isNotNull();
        assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
      }
      try (ProxyStream s = with.open()) {
        Proxy.Routed routed =
            with.request(s, Proxy.Mode.of(BodySendMode.NONE), post(completion(4, 11)), 1);
        assertThat(routed.endpoints()).hasSize(3);
      }
      assertThat(
              HealthGrpc.newBlockingStub(without.channel())
                  .check(HealthCheckRequest.newBuilder().setService("readiness").build())
                  .getStatus())
          .as("health needs no token")
          .isEqualTo(ServingStatus.SERVING);
    }
  }

  @Test
  void process_requestTrailers_fullDuplex_comeAfterTheBodyAndCloseIt() {
    byte[] body = completion(64, 12);
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);
    try (ProxyStream s = proxy.open()) {
      s.send(Proxy.requestHeaders(m, post(body), false));
      s.send(Proxy.body(body, false, true));
      s.send(
          ProcessingRequest.newBuilder()
              .setRequestTrailers(HttpTrailers.getDefaultInstance())
              .build());

      ProcessingResponse headers = s.next();
      assertThat(headers.hasRequestHeaders()).as("the pick answers the headers first").isTrue();
      assertThat(headers.getRequestHeaders().getResponse().getHeaderMutation().getSetHeadersList())
          .anyMatch(h -> h.getHeader().getKey().equals(Messages.DESTINATION));
      ProcessingResponse chunk = s.next();
      assertThat(chunk.hasRequestBody()).isTrue();
      var streamed = chunk.getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
      assertThat(streamed.getBody().toByteArray()).isEqualTo(body);
      assertThat(streamed.getEndOfStream())
          .as("the trailers end the request, not the body")
          .isFalse();
      assertThat(s.next().hasRequestTrailers()).as("then the trailers' answer").isTrue();
    }
  }

  @Test
  void process_bufferedPartial_picksFromAWholeBody_andByLoadFromACutOne() throws Exception {
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.BUFFERED_PARTIAL);
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (EppServer partial = start(config(), Candidates.of(ENDPOINTS), own);
        Proxy p = new Proxy(partial.address(), null)) {
      try (ProxyStream s = p.open()) {
        Proxy.Routed whole = p.request(s, m, post(completion(256, 14)), 1);

        assertThat(whole.endpoints()).hasSize(3);
        assertThat(whole.destinationMetadata()).isEqualTo(whole.destinationHeader());
        assertThat(whole.routeCacheCleared()).isTrue();
        assertThat(own.scrape())
            .as("a body within the proxy's buffer is scored")
            .contains("kvindex_epp_picks_total")
            .doesNotContain("kvindex_epp_unscored_total{");
        p.response(
            s,
            m,
            new Proxy.HttpResponse(200, "text/event-stream", SSE),
            whole.endpoints().get(0),
            1);
        s.halfClose();
        assertThat(s.end()).isNull();
      }
      try (ProxyStream s = p.open()) {
        Proxy.Routed cut = p.request(s, m, post(completion(256, 15)), 2);

        assertThat(cut.endpoints())
            .as("the first piece of a body over the buffer still gets endpoints")
            .hasSize(3);
        assertThat(own.scrape())
            .as("by load: a cut body is not JSON")
            .contains("kvindex_epp_unscored_total{reason=\"unparseable\"} 1.0");
      }
    }
  }

  @Test
  void process_responseTrailers_endTheResponse_andItsUsageIsObserved(@Fresh RedisStandalone redis)
      throws Exception {
    // An index of its own: what is observed must not depend on the shared one's state.
    String uri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("epp").redis(connector).build()) {
      // The pods live in the index, as their ingesters make them (the write loads its scripts).
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
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    for (BodySendMode mode : List.of(BodySendMode.STREAMED, BodySendMode.FULL_DUPLEX_STREAMED)) {
      try (KvRouter ownRouter =
              KvRouter.builder()
                  .redisUri(uri)
                  .indexName("epp")
                  .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
                  .lookupBudget(Duration.ofMillis(500))
                  .meterRegistry(own)
                  .build();
          EppServer trailed =
              EppServer.start(config().build(), ownRouter, Candidates.of(ENDPOINTS), own);
          Proxy p = new Proxy(trailed.address(), null);
          ProxyStream s = p.open()) {
        Proxy.Mode m = new Proxy.Mode(BodySendMode.FULL_DUPLEX_STREAMED, mode, true);
        Proxy.Routed routed = p.request(s, m, post(completion(64, 16)), 1);
        s.send(
            Proxy.responseHeaders(
                new Proxy.HttpResponse(200, "text/event-stream", SSE), routed.endpoints().get(0)));
        assertThat(s.next().hasResponseHeaders()).isTrue();
        s.send(Proxy.responseBody(SSE, false));
        ProcessingResponse body = s.next();
        assertThat(body.hasResponseBody()).as(mode + ": the body answered").isTrue();
        if (mode == BodySendMode.FULL_DUPLEX_STREAMED) {
          var chunk = body.getResponseBody().getResponse().getBodyMutation().getStreamedResponse();
          assertThat(chunk.getBody().toByteArray()).isEqualTo(SSE);
          assertThat(chunk.getEndOfStream()).as("the trailers end the response").isFalse();
        }
        assertThat(own.scrape())
            .as(mode + ": not observed before the response has ended")
            .doesNotContain("kvindex_epp_observations_total{");

        s.send(
            ProcessingRequest.newBuilder()
                .setResponseTrailers(HttpTrailers.getDefaultInstance())
                .build());

        assertThat(s.next().hasResponseTrailers()).as(mode + ": the trailers' answer").isTrue();
        Await.until(() -> own.scrape().contains("kvindex_epp_observations_total{"));
        assertThat(own.scrape())
            .as(mode + ": the usage of a response ended by its trailers is observed")
            .contains("kvindex_epp_observations_total{outcome=\"observed\"}");
        s.halfClose();
        assertThat(s.end()).isNull();
      }
      own.clear();
    }
  }

  @Test
  void process_streamedWithoutWaitingForTheHeadersAnswer_picksFromTheBody() throws Exception {
    byte[] body = completion(64, 13);
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.STREAMED);
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (EppServer streamed = start(config(), Candidates.of(ENDPOINTS), own);
        Proxy p = new Proxy(streamed.address(), null);
        ProxyStream s = p.open()) {
      ProcessingRequest headers = Proxy.requestHeaders(m, post(body), false);
      s.send(
          headers.toBuilder()
              .setProtocolConfig(
                  headers.getProtocolConfig().toBuilder()
                      .setSendBodyWithoutWaitingForHeaderResponse(true))
              .build());
      List<byte[]> pieces = Proxy.split(body, 2);
      for (int i = 0; i < pieces.size(); i++) {
        s.send(Proxy.body(pieces.get(i), i == pieces.size() - 1, true));
      }

      ProcessingResponse answer = s.next();
      assertThat(answer.hasRequestHeaders()).isTrue();
      assertThat(answer.getDynamicMetadata().getFieldsMap()).containsKey(Messages.LB_NAMESPACE);
      assertThat(own.scrape())
          .as("the body came before the pick: it was scored, not picked by load")
          .contains("kvindex_epp_picks_total")
          .doesNotContain("kvindex_epp_unscored_total{");
      for (int i = 0; i < pieces.size(); i++) {
        ProcessingResponse chunk = s.next();
        assertThat(chunk.hasRequestBody()).as("each chunk answered, in order").isTrue();
        assertThat(chunk.getRequestBody().getResponse().hasBodyMutation()).isFalse();
      }
    }
  }

  @Test
  void http_servesMetricsAndProbes() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    InetSocketAddress at = server.metricsAddress();
    Map<String, String> expected =
        Map.of(
            "/metrics", "kvindex_epp_streams_open",
            "/healthz", "",
            "/readyz", "ready: 4 candidate endpoints");
    for (Map.Entry<String, String> e : expected.entrySet()) {
      HttpResponse<String> answer =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + at.getPort() + e.getKey()))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(answer.statusCode()).as(e.getKey()).isEqualTo(200);
      assertThat(answer.body()).as(e.getKey()).contains(e.getValue());
    }
  }

  @Test
  void close_letsAnOpenStreamFinishItsResponse() throws Exception {
    PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    EppServer draining = start(config(), Candidates.of(ENDPOINTS), own);
    Proxy.Mode m = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);
    try (Proxy p = new Proxy(draining.address(), null);
        ProxyStream s = p.open()) {
      Proxy.Routed routed = p.request(s, m, post(completion(32, 14)), 1);
      assertThat(routed.immediateStatus()).isZero();

      Thread closer = new Thread(() -> draining.close(Duration.ofSeconds(60)), "closer");
      closer.start();
      assertThat(
              Await.until(
                  () -> {
                    try {
                      return HealthGrpc.newBlockingStub(p.channel())
                              .check(
                                  HealthCheckRequest.newBuilder().setService("readiness").build())
                              .getStatus()
                          != ServingStatus.SERVING;
                    } catch (StatusRuntimeException refused) {
                      return true; // new calls are refused once it shuts down
                    }
                  }))
          .as("readiness turns NOT_SERVING (or new calls are refused) as the picker shuts down")
          .isTrue();
      byte[] back =
          p.response(
              s,
              m,
              new Proxy.HttpResponse(200, "text/event-stream", SSE),
              routed.endpoints().get(0),
              1);
      assertThat(back).as("the open stream still passes its response on").isEqualTo(SSE);
      assertThat(closer.isAlive()).as("shutdown waits for the open stream").isTrue();
      s.halfClose();
      assertThat(s.end()).isNull();
      closer.join(30_000);
      assertThat(closer.isAlive()).as("shutdown ends once the stream has").isFalse();
      assertThat(own.scrape()).contains("kvindex_epp_streams_total{outcome=\"completed\"} 1.0");
    } finally {
      draining.close(Duration.ZERO);
    }
  }

  private static double gauge(String name) {
    for (String line : registry.scrape().split("\n")) {
      if (line.startsWith(name + " ")) {
        return Double.parseDouble(line.substring(name.length() + 1).trim());
      }
    }
    return Double.NaN;
  }
}
