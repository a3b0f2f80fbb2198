package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touch;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

@UsesRedis
class ScoringServerTest {
  private static final String MODEL = "org/model";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final int[] TOKENS = IntStream.range(0, 16 * 3 + 2).toArray();

  private static RedisStandalone redis;
  private static KvRouter router;
  private static ScoringServer server;

  @BeforeAll
  static void start(@Fresh RedisStandalone fresh) throws IOException {
    redis = fresh;
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString())) {
      PrefixIndex.builder().indexName("http").redis(connector).build().close(); // an ingester's
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    router =
        KvRouter.builder()
            .redisUri(redis.uri().toURI().toString())
            .indexName("http")
            .model(MODEL, ModelKeys.engine("sha256_cbor", "0", 16))
            .lookupBudget(Duration.ofMillis(200))
            .meterRegistry(registry)
            .build();
    server = ScoringServer.start(router, registry, new InetSocketAddress("127.0.0.1", 0), 2);
    storeOnPodA(router.blockKeys(MODEL, null, null, TOKENS));
  }

  private static void storeOnPodA(long[] keys) {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString());
        PrefixIndex index = PrefixIndex.builder().indexName("http").redis(connector).build()) {
      List<Long> hashes = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        hashes.add(keys[i]);
      }
      StreamId stream = StreamId.of(MODEL, "pod-a");
      Lease token = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
      index.apply(
          stream,
          KeyMode.ENGINE,
          1,
          token,
          KvEventBatch.of(0, List.of(BlockStored.of(hashes, null, List.of(), 16)), 0));
    }
  }

  @AfterAll
  static void stop() {
    server.close();
    router.close();
  }

  private static HttpResponse<String> send(String method, String path, String body)
      throws IOException, InterruptedException {
    URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10));
    request.method(
        method,
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String tokens() {
    return IntStream.of(TOKENS)
        .mapToObj(String::valueOf)
        .collect(Collectors.joining(",", "[", "]"));
  }

  private static String observation(String pod, String extra) {
    return "{\"model\":\""
        + MODEL
        + "\",\"pod\":\""
        + pod
        + "\",\"predicted_blocks\":3,\"prompt_tokens\":50,\"cached_tokens\":32"
        + extra
        + "}";
  }

  /**
   * {@code /observe} of a pod whose evictions the index infers: the router hashes the prompt given
   * as {@code /score} took it and records its blocks, with the error, for the pod's owners.
   */
  @Test
  void observe_podWhoseEvictionsAreInferred_recordsThePromptsBlocks() throws Exception {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString());
        PrefixIndex index = PrefixIndex.builder().indexName("http").redis(connector).build()) {
      StreamId stream = StreamId.of(MODEL, "pod-i");
      assertThat(index.markEvictionsInferred(MODEL, "pod-i", 64, Duration.ofMinutes(1))).isTrue();
      String cursor = index.touches(stream, null, 1).cursor();
      Poll.until(() -> router.needsBlockKeys(MODEL, "pod-i"));

      HttpResponse<String> response =
          send("POST", "/observe", observation("pod-i", ",\"token_ids\":" + tokens()));

      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      JsonNode body = JSON.readTree(response.body());
      assertThat(body.get("prediction_error_blocks").asInt()).isEqualTo(1);
      assertThat(body.get("outcome").asText()).isEqualTo("over");
      assertThat(body.get("blocks_wanted").asBoolean()).isTrue();
      List<Touch> read = new ArrayList<>(); // a read drops what it returns: keep it
      Poll.until(() -> read.addAll(index.touches(stream, cursor, 10).touches()));
      Touch touch = read.get(0);
      assertThat(touch.blockKeys()).containsExactly(router.blockKeys(MODEL, null, null, TOKENS));
      assertThat(touch.errorBlocks()).isEqualTo(1);
    }
  }

  @Test
  void observe_badPromptFields_400SayingWhy() throws Exception {
    HttpResponse<String> both =
        send(
            "POST",
            "/observe",
            observation("pod-a", ",\"token_ids\":" + tokens() + ",\"block_keys\":[\"1\"]"));
    assertThat(both.statusCode()).isEqualTo(400);
    assertThat(both.body()).contains("at most one of 'token_ids' and 'block_keys'");
    HttpResponse<String> rank = send("POST", "/observe", observation("pod-a", ",\"rank\":-1"));
    assertThat(rank.statusCode()).isEqualTo(400);
    assertThat(rank.body()).contains("'rank' must be >= 0");
    assertThat(send("POST", "/observe", observation("pod-a", "")).statusCode()).isEqualTo(200);
  }

  @Test
  void score_queuedTokens_theWarmPodBehindAQueueLosesToTheIdleOne() throws Exception {
    String body =
        "{\"model\":\""
            + MODEL
            + "\",\"token_ids\":"
            + tokens()
            + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":1,\"pod-b\":0},"
            + "\"queued_tokens\":{\"pod-a\":%d,\"pod-b\":0}}";
    JsonNode idle = JSON.readTree(send("POST", "/score", String.format(body, 0)).body());
    assertThat(idle.get("pick").get("pod").asText()).isEqualTo("pod-a");

    JsonNode queued = JSON.readTree(send("POST", "/score", String.format(body, 20_000)).body());
    assertThat(queued.get("pick").get("pod").asText()).isEqualTo("pod-b");
    assertThat(queued.get("pick").get("reason").asText()).isEqualTo("estimated_ttft");

    HttpResponse<String> negative = send("POST", "/score", String.format(body, -1));
    assertThat(negative.statusCode()).isEqualTo(400);
    assertThat(negative.body()).contains("queued_tokens.pod-a");
  }

  @Test
  void score_returnsThePerPodMatchsAndAPick() throws Exception {
    HttpResponse<String> response =
        send(
            "POST",
            "/score",
            "{\"model\":\""
                + MODEL
                + "\",\"token_ids\":"
                + tokens()
                + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":1,\"pod-b\":0},"
                + "\"queued_tokens\":{\"pod-a\":0,\"pod-b\":0}}");

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = JSON.readTree(response.body());
    assertThat(body.get("outcome").asText()).isEqualTo("hit");
    assertThat(body.get("queried_blocks").asInt()).isEqualTo(3);
    JsonNode podA = body.get("pods").get("pod-a");
    assertThat(podA.get("matched_blocks").asInt()).isEqualTo(2);
    assertThat(podA.get("matched_tokens").asInt()).isEqualTo(32);
    assertThat(podA.get("speculative").asBoolean()).isFalse();
    assertThat(body.get("pods").get("pod-b").get("matched_blocks").asInt()).isZero();
    assertThat(body.get("pick").get("pod").asText()).isEqualTo("pod-a");
    assertThat(body.get("pick").get("reason").asText()).isEqualTo("longest_prefix");
  }

  @Test
  void score_explain_givesEachCandidatesDepthsVerdictAndPodRecord() throws Exception {
    HttpResponse<String> response =
        send(
            "POST",
            "/score",
            "{\"model\":\""
                + MODEL
                + "\",\"token_ids\":"
                + tokens()
                + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":1},"
                + "\"queued_tokens\":{\"pod-a\":0},\"explain\":true}");

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode explain = JSON.readTree(response.body()).get("explain");
    assertThat(explain.get("pick").get("pod").asText()).isEqualTo("pod-a");
    JsonNode podA = explain.get("candidates").get("pod-a");
    assertThat(podA.get("depth_blocks").get("gpu").asInt()).isEqualTo(2);
    assertThat(podA.get("depth_blocks").get("gpu_cpu").asInt()).isEqualTo(2);
    assertThat(podA.get("depth_blocks").get("any_tier").asInt()).isEqualTo(2);
    assertThat(podA.get("load").asDouble()).isEqualTo(1.0);
    assertThat(podA.get("verdict").asText()).isEqualTo("chosen");
    assertThat(podA.get("pod_record").get("live").asBoolean()).isTrue();
    assertThat(podA.get("pod_record").get("remaining_ms").asLong()).isPositive();
    JsonNode podB = explain.get("candidates").get("pod-b");
    assertThat(podB.get("verdict").asText()).isEqualTo("slower_estimate");
    assertThat(podB.get("pod_record").get("recorded").asBoolean()).isFalse();
    assertThat(podB.get("pod_record").get("live").asBoolean()).isFalse();
  }

  @Test
  void score_explainNotABoolean_is400() throws Exception {
    HttpResponse<String> response =
        send(
            "POST",
            "/score",
            "{\"model\":\"" + MODEL + "\",\"token_ids\":[1],\"pods\":[\"a\"],\"explain\":1}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).contains("'explain' must be true or false");
  }

  @Test
  void score_recordsThePickAsASpeculativeRoute() throws Exception {
    live(List.of("pod-s1", "pod-s2"), Duration.ofMinutes(1));
    String body =
        "{\"model\":\""
            + MODEL
            + "\",\"token_ids\":"
            + tokens()
            + ",\"pods\":[\"pod-s1\",\"pod-s2\"]";
    HttpResponse<String> routed =
        send("POST", "/score", body + ",\"load\":{\"pod-s2\":5},\"record_ttl_ms\":30000}");
    assertThat(JSON.readTree(routed.body()).get("pick").get("pod").asText()).isEqualTo("pod-s1");

    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    JsonNode podS1;
    do {
      podS1 = JSON.readTree(send("POST", "/score", body + "}").body()).get("pods").get("pod-s1");
    } while (podS1.get("matched_blocks").asInt() == 0 && System.nanoTime() < deadline);
    assertThat(podS1.get("matched_blocks").asInt()).isEqualTo(3);
    assertThat(podS1.get("speculative").asBoolean()).isTrue();
    assertError(send("POST", "/score", body + ",\"record_ttl_ms\":0}"), 400, "record_ttl_ms");
    live(List.of("pod-s1", "pod-s2"), Duration.ofMillis(1)); // gone again, for the other tests
  }

  private static void live(List<String> pods, Duration ttl) throws Exception {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString());
        PrefixIndex index = PrefixIndex.builder().indexName("http").redis(connector).build()) {
      for (String pod : pods) {
        assertThat(index.heartbeat(MODEL, pod, ttl)).isTrue();
      }
    }
  }

  @Test
  void query_dynamoShapeByDefault() throws Exception {
    HttpResponse<String> response =
        send(
            "POST",
            "/query",
            "{\"model_name\":\""
                + MODEL
                + "\",\"token_ids\":"
                + tokens()
                + ",\"instances\":[\"pod-a\",\"pod-b\"]}");

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = JSON.readTree(response.body());
    assertThat(body.get("longest_matched").asInt()).isEqualTo(32);
    JsonNode a = body.get("instances").get("pod-a");
    assertThat(a.get("longest_matched").asInt()).isEqualTo(32);
    assertThat(a.get("gpu").asInt()).isEqualTo(32);
    assertThat(a.get("cpu").asInt()).isEqualTo(32);
    assertThat(a.get("disk").asInt()).isEqualTo(32);
    assertThat(a.get("dp").get("0").asInt()).isEqualTo(32);
    assertThat(body.get("scores").get("pod-a").get("0").asInt()).isEqualTo(32);
    assertThat(body.get("instances").get("pod-b").get("longest_matched").asInt()).isZero();
  }

  @Test
  void query_withoutInstancesAsksEveryLivePod() throws Exception {
    HttpResponse<String> response =
        send("POST", "/query", "{\"model\":\"" + MODEL + "\",\"token_ids\":" + tokens() + "}");

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode instances = JSON.readTree(response.body()).get("instances");
    assertThat(instances.size()).isEqualTo(1);
    assertThat(instances.get("pod-a").get("longest_matched").asInt()).isEqualTo(32);
  }

  @Test
  void query_mooncakeShapeOnRequest() throws Exception {
    HttpResponse<String> response =
        send(
            "POST",
            "/query?format=mooncake",
            "{\"model\":\""
                + MODEL
                + "\",\"token_ids\":"
                + tokens()
                + ",\"block_size\":16,\"tenant_id\":\"t1\",\"instance_id\":\"pod-a\"}");

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode a = JSON.readTree(response.body()).get("t1").get("pod-a");
    assertThat(a.get("longest_matched").asInt()).isEqualTo(32);
    assertThat(a.get("GPU").asInt()).isEqualTo(32);
    assertThat(a.get("DP").get("0").asInt()).isEqualTo(32);
  }

  @Test
  void badInput_answers400WithAMessage() throws Exception {
    assertError(send("POST", "/score", "{not json"), 400, "not valid JSON");
    assertError(
        send("POST", "/score", "{\"token_ids\":[1],\"pods\":[\"a\"]}"),
        400,
        "'model' or 'model_name' is required");
    assertError(
        send(
            "POST", "/score", "{\"model\":\"" + MODEL + "\",\"token_ids\":\"x\",\"pods\":[\"a\"]}"),
        400,
        "'token_ids' must be a JSON array");
    assertError(
        send("POST", "/score", "{\"model\":\"" + MODEL + "\",\"token_ids\":[-1],\"pods\":[\"a\"]}"),
        400,
        "non-negative integer token id");
    assertError(
        send("POST", "/score", "{\"model\":\"nope\",\"token_ids\":[1],\"pods\":[\"a\"]}"),
        400,
        "has no key mode configured");
    assertError(
        send(
            "POST",
            "/query",
            "{\"model\":\""
                + MODEL
                + "\",\"token_ids\":[1],\"block_size\":64,\"instance_id\":\"a\"}"),
        400,
        "does not match the block size 16");
    assertError(
        send(
            "POST",
            "/query?format=xml",
            "{\"model\":\"" + MODEL + "\",\"token_ids\":[1],\"instance_id\":\"a\"}"),
        400,
        "'format' must be");
    assertError(send("GET", "/score", null), 405, "use POST");
    assertError(send("GET", "/nowhere", null), 404, "no route /nowhere");
  }

  @Test
  void probesAndMetrics() throws Exception {
    assertThat(send("GET", "/healthz", null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/readyz", null).statusCode()).isEqualTo(200);
    send(
        "POST",
        "/score",
        "{\"model\":\"" + MODEL + "\",\"token_ids\":" + tokens() + ",\"pods\":[\"pod-a\"]}");
    HttpResponse<String> metrics = send("GET", "/metrics", null);
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains("kvindex_router_lookup_seconds_bucket")
        .contains("outcome=\"hit\"")
        .contains("kvindex_router_unavailable_total")
        .contains("kvindex_index_lookup_rereads_total");
    // Lookups read pod records: the index's meters reach the router's registry.
    assertThat(metrics.body())
        .containsPattern("kvindex_index_lookup_pod_records_total\\{index=\"[^\"]*\",?\\} [1-9]");
  }

  @Test
  void unavailableIndex_answers503() throws Exception {
    redis.node().pause();
    try {
      HttpResponse<String> score =
          send(
              "POST",
              "/score",
              "{\"model\":\""
                  + MODEL
                  + "\",\"token_ids\":"
                  + tokens()
                  + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":3}}");
      assertError(score, 503, "index unavailable");
      assertThat(JSON.readTree(score.body()).get("pick").get("pod").asText()).isEqualTo("pod-b");
      assertError(
          send(
              "POST",
              "/query",
              "{\"model\":\""
                  + MODEL
                  + "\",\"token_ids\":"
                  + tokens()
                  + ",\"instance_id\":\"pod-a\"}"),
          503,
          "index unavailable");
      // Without pods: the live pods (possibly reused from a second ago), then the lookup.
      assertError(
          send("POST", "/query", "{\"model\":\"" + MODEL + "\",\"token_ids\":" + tokens() + "}"),
          503,
          "index unavailable");
      HttpResponse<String> ready = send("GET", "/readyz", null);
      assertThat(ready.statusCode()).isEqualTo(503);
      assertThat(ready.body()).startsWith("not ready");
    } finally {
      redis.node().resume();
    }
  }

  private static void assertError(HttpResponse<String> response, int status, String message)
      throws IOException {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(JSON.readTree(response.body()).get("error").asText()).contains(message);
  }
}
