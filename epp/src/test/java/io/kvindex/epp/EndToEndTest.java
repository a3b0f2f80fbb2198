package io.kvindex.epp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.simulator.HashMode;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The whole loop without Envoy: simulated vLLM pods serving the OpenAI API, a real ingester
 * indexing their KV events, and the picker, called by a client that plays the proxy's part and
 * forwards each request to the endpoint picked, and the response back through the picker. Requests
 * sharing a prefix go where it is cached, and the engines' usage closes the loop by itself.
 */
@UsesRedis
class EndToEndTest {
  private static final String MODEL = "org/e2e";
  private static final int BLOCK = 16;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final Proxy.Mode DUPLEX = Proxy.Mode.of(BodySendMode.FULL_DUPLEX_STREAMED);

  private static final List<SimulatedPod> pods = new ArrayList<>();
  private static Ingester ingester;
  private static KvRouter router;
  private static PrometheusMeterRegistry registry;
  private static EppServer server;
  private static Proxy proxy;

  /** One request through the proxy: where it went and what the engine answered. */
  record Served(String endpoint, int status, JsonNode usage, String body) {}

  @BeforeAll
  static void start(@Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    List<PodSpec> specs = new ArrayList<>();
    List<Endpoint> endpoints = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      SimulatedPod pod =
          SimulatedPod.start(
              PodConfig.builder()
                  .name("sim-" + i)
                  .model(MODEL)
                  .blockSize(BLOCK)
                  .capacityBlocks(4096)
                  .hashMode(HashMode.ENGINE)
                  .hashAlgorithm(HashAlgorithm.SHA256_CBOR)
                  .hashSeed("42")
                  .build());
      pods.add(pod);
      StreamEndpoints e = pod.endpoints().get(0);
      specs.add(
          new PodSpec(
              pod.name(),
              MODEL,
              e.publish(),
              !e.publishBound(),
              e.replay(),
              null,
              List.of(0),
              PodSpec.keyMode("engine"),
              e.topic()));
      URI http = pod.httpAddress();
      endpoints.add(Endpoint.of(pod.name(), http.getHost(), http.getPort()));
    }
    ingester =
        Ingester.start(
            IngesterConfig.builder()
                .redisUri(uri)
                .indexName("e2e")
                .replicaId("e2e")
                .httpPort(-1)
                .leaseTtl(Duration.ofMillis(1500))
                .reconcileInterval(Duration.ofMillis(200))
                .idleCatchUp(Duration.ofMillis(300))
                .replayIdleTimeout(Duration.ofMillis(500))
                .pods(specs)
                .build());
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    router =
        KvRouter.builder()
            .redisUri(uri)
            .indexName("e2e")
            .model(MODEL, ModelKeys.engine("sha256_cbor", "42", BLOCK))
            .lookupBudget(Duration.ofMillis(500))
            .meterRegistry(registry)
            .build();
    server =
        EppServer.start(
            EppConfig.builder()
                .listen(new InetSocketAddress("127.0.0.1", 0))
                .metricsListen(new InetSocketAddress("127.0.0.1", 0))
                .scrapeInterval(Duration.ofMillis(100))
                .tokenizeTimeout(Duration.ofSeconds(2))
                .shutdownGrace(Duration.ofSeconds(5))
                .models(Set.of(MODEL), false, Map.of())
                .build(),
            router,
            Candidates.of(endpoints),
            registry);
    proxy = new Proxy(server.address(), null);
  }

  @AfterAll
  static void stop() {
    if (proxy != null) {
      proxy.close();
    }
    if (server != null) {
      server.close();
    }
    if (router != null) {
      router.close();
    }
    if (ingester != null) {
      ingester.close();
    }
    pods.forEach(SimulatedPod::close);
  }

  /** Sends one request through the proxy and the picker to the pod picked, and back. */
  static Served exchange(Proxy.Mode mode, String path, String body) throws Exception {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    try (ProxyStream s = proxy.open()) {
      Proxy.Routed routed =
          proxy.request(s, mode, new Proxy.HttpRequest(path, Map.of(), bytes, null), 3);
      assertThat(routed.immediateStatus()).isZero();
      String endpoint = routed.endpoints().get(0);
      HttpResponse<byte[]> answer =
          HTTP.send(
              HttpRequest.newBuilder(URI.create("http://" + endpoint + path))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofByteArray(routed.bodyPassedOn()))
                  .build(),
              HttpResponse.BodyHandlers.ofByteArray());
      String type = answer.headers().firstValue("content-type").orElse("application/json");
      byte[] back =
          proxy.response(
              s,
              mode,
              new Proxy.HttpResponse(answer.statusCode(), type, answer.body()),
              endpoint,
              4);
      assertThat(back).as("the response passes the picker unchanged").isEqualTo(answer.body());
      s.halfClose();
      assertThat(s.end()).isNull();
      String text = new String(answer.body(), StandardCharsets.UTF_8);
      return new Served(endpoint, answer.statusCode(), usage(text), text);
    }
  }

  private static JsonNode usage(String body) throws Exception {
    if (!body.startsWith("data:")) {
      return JSON.readTree(body).path("usage");
    }
    JsonNode last = null;
    for (String line : body.split("\n")) {
      if (line.startsWith("data: {")) {
        JsonNode u = JSON.readTree(line.substring(6)).path("usage");
        if (u.isObject()) {
          last = u;
        }
      }
    }
    return last;
  }

  private static String tokens(int n, int seed) {
    return IntStream.range(0, n)
        .mapToObj(i -> Integer.toString(100 + (i * 31 + seed * 977) % 20000))
        .collect(Collectors.joining(","));
  }

  private static String completion(String tokens, boolean stream, boolean usage) {
    return "{\"model\":\""
        + MODEL
        + "\",\"prompt\":["
        + tokens
        + "],\"max_tokens\":4"
        + (stream ? ",\"stream\":true" : "")
        + (usage ? ",\"stream_options\":{\"include_usage\":true}" : "")
        + "}";
  }

  private static double counter(String line) {
    double sum = 0;
    for (String l : registry.scrape().split("\n")) {
      if (l.startsWith(line)) {
        sum += Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /**
   * The depth of the prompt the index holds for the pod at the endpoint, confirmed by its engine.
   */
  private static int confirmedDepth(String tokens, String endpoint) {
    SimulatedPod pod =
        pods.stream()
            .filter(
                p -> endpoint.equals(p.httpAddress().getHost() + ":" + p.httpAddress().getPort()))
            .findFirst()
            .orElseThrow();
    int[] ids = java.util.Arrays.stream(tokens.split(",")).mapToInt(Integer::parseInt).toArray();
    return router
        .score(MODEL, null, ids, List.of(pod.name()))
        .pod(pod.name())
        .filter(m -> !m.speculative())
        .map(m -> m.depth())
        .orElse(0);
  }

  @Test
  void tokenPrompts_sharingAPrefix_goWhereItIsCachedAndCloseTheLoop() throws Exception {
    String prefix = tokens(BLOCK * 12, 1);
    Served first = exchange(DUPLEX, "/v1/completions", completion(prefix + ",7", false, false));
    assertThat(first.status()).isEqualTo(200);
    // Until the ingester has applied the engine's events, the picks rest on the picker's own
    // speculative route, and observations of speculative predictions are not judged.
    assertThat(Await.until(() -> confirmedDepth(prefix, first.endpoint()) == 12))
        .as("the engine's blocks reached the index")
        .isTrue();
    double exactBefore = counter("kvindex_router_predictions_total{outcome=\"exact\"");

    for (int i = 0; i < 6; i++) {
      Served again =
          exchange(DUPLEX, "/v1/completions", completion(prefix + "," + (900 + i), false, false));
      assertThat(again.endpoint()).as("request %d", i).isEqualTo(first.endpoint());
      assertThat(again.usage().path("prompt_tokens_details").path("cached_tokens").asInt())
          .isEqualTo(BLOCK * 12);
    }
    assertThat(
            Await.until(() -> counter("kvindex_epp_observations_total{outcome=\"observed\"") >= 7))
        .isTrue();
    assertThat(counter("kvindex_router_predictions_total{outcome=\"exact\""))
        .as("the picker observed the engines' usage against its predictions")
        .isGreaterThan(exactBefore);
  }

  @Test
  void chatPrompts_areTokenizedByAnEngineAndStick() throws Exception {
    String chat =
        "{\"model\":\""
            + MODEL
            + "\",\"messages\":[{\"role\":\"system\",\"content\":\""
            + "You are a careful assistant who answers in full sentences and cites sources. "
                .repeat(8)
            + "\"},{\"role\":\"user\",\"content\":\"What is a KV cache?\"}],\"max_tokens\":3}";
    Served first = exchange(DUPLEX, "/v1/chat/completions", chat);
    assertThat(first.status()).isEqualTo(200);
    Served again = exchange(DUPLEX, "/v1/chat/completions", chat);

    assertThat(again.endpoint()).isEqualTo(first.endpoint());
    int prompt = again.usage().path("prompt_tokens").asInt();
    assertThat(again.usage().path("prompt_tokens_details").path("cached_tokens").asInt())
        .as("every full block of the %d-token chat prompt was cached", prompt)
        .isEqualTo((prompt - 1) / BLOCK * BLOCK);
    assertThat(counter("kvindex_epp_tokenize_seconds_count{outcome=\"ok\"")).isGreaterThan(0);
  }

  @Test
  void streamedResponses_giveTheirUsageWhenAskedAndAreCountedWhenNot() throws Exception {
    String prefix = tokens(BLOCK * 5, 2);
    double noUsage = counter("kvindex_epp_observations_total{outcome=\"no_usage\"");
    Served streamed = exchange(DUPLEX, "/v1/completions", completion(prefix, true, true));
    assertThat(streamed.body()).startsWith("data:").endsWith("data: [DONE]\n\n");
    assertThat(streamed.usage()).isNotNull();

    exchange(DUPLEX, "/v1/completions", completion(prefix, true, false));

    assertThat(counter("kvindex_epp_observations_total{outcome=\"no_usage\""))
        .isEqualTo(noUsage + 1);
  }

  @Test
  void bufferedMode_routesAndObservesToo() throws Exception {
    Proxy.Mode buffered = Proxy.Mode.of(BodySendMode.BUFFERED);
    String prefix = tokens(BLOCK * 8, 3);
    Served first = exchange(buffered, "/v1/completions", completion(prefix + ",1", false, false));
    Served again = exchange(buffered, "/v1/completions", completion(prefix + ",2", false, false));

    assertThat(again.endpoint()).isEqualTo(first.endpoint());
    assertThat(again.usage().path("prompt_tokens_details").path("cached_tokens").asInt())
        .isEqualTo(BLOCK * 8);
  }
}
