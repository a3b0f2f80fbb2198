package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.index.PrefixIndex;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Each limit of the scoring service: at the limit the request is served, past it refused. */
@UsesRedis
class ScoringServerLimitsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final int MAX_BODY = 2048;
  private static final int MAX_TOKENS = 64;
  private static final int MAX_KEYS = 2;
  private static final int MAX_PODS = 3;
  private static final int MAX_NAME = 16;

  private static KvRouter router;
  private static ScoringServer server;
  private static String redisUri;

  @BeforeAll
  static void start(RedisStandalone redis) throws IOException {
    redisUri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(redisUri)) {
      PrefixIndex.builder().indexName("limits").redis(connector).build().close(); // an ingester's
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    router =
        KvRouter.builder()
            .redisUri(redis.uri().toURI().toString())
            .indexName("limits")
            .defaultModelKeys(ModelKeys.token(16))
            .lookupBudget(Duration.ofSeconds(1))
            .meterRegistry(registry)
            .build();
    server =
        ScoringServer.builder()
            .address(new InetSocketAddress("127.0.0.1", 0))
            .threads(2)
            .maxBodyBytes(MAX_BODY)
            .maxTokens(MAX_TOKENS)
            .maxBlockKeys(MAX_KEYS)
            .maxCandidates(MAX_PODS)
            .maxNameBytes(MAX_NAME)
            .maxRecordTtl(Duration.ofSeconds(2))
            .start(router, registry);
  }

  @AfterAll
  static void stop() {
    server.close();
    router.close();
  }

  private static HttpResponse<String> post(String path, String body)
      throws IOException, InterruptedException {
    URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    return HTTP.send(
        HttpRequest.newBuilder(uri)
            .timeout(Duration.ofSeconds(10))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String ints(int n) {
    return IntStream.range(0, n)
        .mapToObj(String::valueOf)
        .collect(Collectors.joining(",", "[", "]"));
  }

  private static String pods(int n) {
    return IntStream.range(0, n)
        .mapToObj(i -> "\"pod-" + i + "\"")
        .collect(Collectors.joining(",", "[", "]"));
  }

  private static void assertServed(HttpResponse<String> response) {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
  }

  private static void assertRefused(HttpResponse<String> response, int status, String... says)
      throws IOException {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(JSON.readTree(response.body()).get("error").asText()).contains(says);
  }

  @Test
  void body_overTheLimitIs413() throws Exception {
    String json = "{\"model\":\"m\",\"token_ids\":[1],\"pods\":[\"a\"]}";
    String atLimit =
        json.substring(0, json.length() - 1) + " ".repeat(MAX_BODY - json.length()) + "}";
    assertThat(atLimit.getBytes(StandardCharsets.UTF_8)).hasSize(MAX_BODY);

    assertServed(post("/score", atLimit));
    assertRefused(
        post("/score", atLimit + " "),
        413,
        "larger than 2048 bytes",
        "max-body-bytes (--max-body-bytes, KVINDEX_MAX_BODY_BYTES)");
  }

  @Test
  void tokens_overTheLimitAre413() throws Exception {
    String prefix = "{\"model\":\"m\",\"pods\":[\"a\"],\"token_ids\":";
    assertServed(post("/score", prefix + ints(MAX_TOKENS) + "}"));
    assertRefused(
        post("/score", prefix + ints(MAX_TOKENS + 1) + "}"),
        413,
        "'token_ids' has 65 token ids, over the limit of 64",
        "max-tokens (--max-tokens, KVINDEX_MAX_TOKENS)");
    assertRefused(post("/query", prefix + ints(MAX_TOKENS + 1) + "}"), 413, "max-tokens");
  }

  @Test
  void blockKeys_overTheLimitAre413() throws Exception {
    String prefix = "{\"model\":\"m\",\"pods\":[\"a\"],\"block_keys\":";
    assertServed(post("/score", prefix + ints(MAX_KEYS) + "}"));
    assertRefused(
        post("/score", prefix + ints(MAX_KEYS + 1) + "}"),
        413,
        "'block_keys' has 3 block keys, over the limit of 2",
        "max-block-keys (--max-block-keys, KVINDEX_MAX_BLOCK_KEYS)");
    assertRefused(post("/query", prefix + ints(MAX_KEYS + 1) + "}"), 413, "max-block-keys");
  }

  @Test
  void candidates_overTheLimitAre413() throws Exception {
    String prefix = "{\"model\":\"m\",\"token_ids\":[1],";
    assertServed(post("/score", prefix + "\"pods\":" + pods(MAX_PODS) + "}"));
    assertServed(post("/query", prefix + "\"instances\":" + pods(MAX_PODS) + "}"));
    assertRefused(
        post("/score", prefix + "\"pods\":" + pods(MAX_PODS + 1) + "}"),
        413,
        "'pods' has 4 pods, over the limit of 3",
        "max-candidates (--max-candidates, KVINDEX_MAX_CANDIDATES)");
    assertRefused(
        post("/query", prefix + "\"instances\":" + pods(MAX_PODS + 1) + "}"),
        413,
        "max-candidates");
  }

  @Test
  void names_overTheLimitAre400() throws Exception {
    String sixteen = "m".repeat(MAX_NAME);
    String eightAccents = "é".repeat(MAX_NAME / 2); // 2 UTF-8 bytes each: at the limit
    for (String atLimit : new String[] {sixteen, eightAccents}) {
      assertServed(
          post(
              "/score",
              "{\"model\":\""
                  + atLimit
                  + "\",\"lora_name\":\""
                  + atLimit
                  + "\",\"token_ids\":[1],"
                  + "\"pods\":[\""
                  + atLimit
                  + "\"]}"));
    }
    String over = eightAccents + "m";
    assertRefused(
        post("/score", "{\"model\":\"" + over + "\",\"token_ids\":[1],\"pods\":[\"a\"]}"),
        400,
        "'model' is 17 bytes long, over the limit of 16 bytes",
        "max-name-bytes (--max-name-bytes, KVINDEX_MAX_NAME_BYTES)");
    assertRefused(
        post("/score", "{\"model\":\"m\",\"token_ids\":[1],\"pods\":[\"a\",\"" + over + "\"]}"),
        400,
        "'pods[1]' is 17 bytes long",
        "max-name-bytes");
    assertRefused(
        post("/query", "{\"model\":\"m\",\"token_ids\":[1],\"instance_id\":\"" + over + "\"}"),
        400,
        "'instance_id' is 17 bytes long");
    assertRefused(
        post(
            "/score",
            "{\"model\":\"m\",\"lora_name\":\"" + over + "\",\"token_ids\":[1],\"pods\":[\"a\"]}"),
        400,
        "'lora_name' is 17 bytes long");
  }

  @Test
  void recordTtl_overTheLimitIs400() throws Exception {
    String body = "{\"model\":\"m\",\"token_ids\":[1],\"pods\":[\"a\"],\"load\":{\"a\":0},";
    assertServed(post("/score", body + "\"record_ttl_ms\":2000}"));
    assertRefused(
        post("/score", body + "\"record_ttl_ms\":2001}"),
        400,
        "'record_ttl_ms' 2001 is over the limit of 2000 ms",
        "max-record-ttl (--max-record-ttl, KVINDEX_MAX_RECORD_TTL)");
  }

  /** A speculative route writes the prompt's first blocks only, up to the block-key limit. */
  @Test
  void recordTtl_recordsAtMostTheBlockKeyLimit() throws Exception {
    try (RedisConnector connector = RedisConnector.connect(redisUri);
        PrefixIndex index = PrefixIndex.builder().indexName("limits").redis(connector).build()) {
      assertThat(index.heartbeat("spec", "pod-s", Duration.ofMinutes(1))).isTrue(); // a live pod
    }
    String body = "{\"model\":\"spec\",\"token_ids\":" + ints(MAX_TOKENS) + ",\"pods\":[\"pod-s\"]";
    HttpResponse<String> routed = post("/score", body + ",\"load\":{},\"record_ttl_ms\":2000}");
    assertServed(routed);
    assertThat(JSON.readTree(routed.body()).get("queried_blocks").asInt()).isEqualTo(4);

    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    JsonNode pod;
    do {
      pod = JSON.readTree(post("/score", body + "}").body()).get("pods").get("pod-s");
    } while (pod.get("matched_blocks").asInt() == 0 && System.nanoTime() < deadline);
    assertThat(pod.get("speculative").asBoolean()).isTrue();
    assertThat(pod.get("matched_blocks").asInt()).isEqualTo(MAX_KEYS);
  }
}
