package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.TextNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
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
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * {@code openapi.yaml} describes what a running router answers: each request below goes to a real
 * router on a real Redis (paused for the 503s), and its status, content type, headers and body are
 * checked against the document's response for that route and status with a JSON Schema 2020-12
 * validator; the valid requests are checked against the document's request schema too. Every
 * response the document lists must be met by some request, but for the 500s, which take an error
 * retrying cannot fix.
 */
@UsesRedis
class OpenApiContractTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "https://kvindex.io/openapi.yaml";
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final String MODEL = "org/model";
  private static final String TOKEN = "contract-secret";
  private static final int BLOCK = 16;
  private static final int MAX_TOKENS = 64;
  private static final int MAX_CANDIDATES = 4;

  /** One request, and whether it carries the token. */
  private record Call(String method, String path, String body, boolean authorized) {
    static Call post(String path, String body) {
      return new Call("POST", path, body, true);
    }

    static Call get(String path) {
      return new Call("GET", path, null, true);
    }

    Call anonymous() {
      return new Call(method, path, body, false);
    }

    /** The document's path: the request's without its query. */
    String route() {
      int q = path.indexOf('?');
      return q < 0 ? path : path.substring(0, q);
    }
  }

  private final JsonNode doc = document();
  private final SchemaRegistry schemas =
      SchemaRegistry.withDefaultDialect(
          SpecificationVersion.DRAFT_2020_12, b -> b.schemas(Map.of(BASE, doc.toString())));
  private final Set<String> met = new TreeSet<>();

  @Test
  void everyResponse_isOneTheDocumentDescribes(@Fresh RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(uri)) {
      PrefixIndex.builder().indexName("contract").redis(connector).build().close(); // an ingester's
    }
    PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (KvRouter router =
            KvRouter.builder()
                .redisUri(uri)
                .indexName("contract")
                .model(MODEL, ModelKeys.engine("sha256_cbor", "0", BLOCK))
                .lookupBudget(Duration.ofMillis(200))
                .meterRegistry(meters)
                .build();
        ScoringServer server =
            ScoringServer.builder()
                .address(new InetSocketAddress("127.0.0.1", 0))
                .threads(2)
                .maxTokens(MAX_TOKENS)
                .maxCandidates(MAX_CANDIDATES)
                .authToken(TOKEN)
                .authMetrics(true)
                .start(router, meters)) {
      int[] prompt = IntStream.range(0, BLOCK * 3 + 2).toArray();
      long[] keys = router.blockKeys(MODEL, null, null, prompt);
      storeOnPodA(uri, keys);
      URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
      SoftAssertions softly = new SoftAssertions();

      for (Call call : served(prompt, keys)) {
        check(softly, base, call);
      }
      redis.node().pause();
      try {
        for (Call call : unavailable(prompt)) {
          check(softly, base, call);
        }
      } finally {
        redis.node().resume();
      }

      softly.assertThat(documented()).as("documented but never answered").isSubsetOf(met);
      softly.assertAll();
    }
  }

  /** Requests a router with a reachable Redis answers, one or more for each response. */
  private static List<Call> served(int[] prompt, long[] keys) {
    String tokens = ints(prompt);
    String scored = "{\"model\":\"" + MODEL + "\",\"token_ids\":" + tokens;
    String asStrings =
        IntStream.range(0, keys.length)
            .mapToObj(i -> "\"" + Long.toUnsignedString(keys[i]) + "\"")
            .collect(Collectors.joining(",", "[", "]"));
    String tooMany = ints(IntStream.range(0, MAX_TOKENS + 1).toArray());
    String observed =
        "{\"model\":\""
            + MODEL
            + "\",\"pod\":\"pod-a\",\"predicted_blocks\":3,\"prompt_tokens\":"
            + prompt.length
            + ",\"cached_tokens\":16";
    return List.of(
        Call.post("/score", scored + ",\"pods\":[\"pod-a\",\"pod-b\"]}"),
        Call.post("/score", scored + ",\"candidate_pods\":[\"pod-b\"],\"lora_name\":null}"),
        Call.post(
            "/score",
            scored
                + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":1},\"record_ttl_ms\":500}"),
        Call.post(
            "/score",
            scored + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-a\":30},\"explain\":true}"),
        Call.post("/score", scored + ",\"pods\":[\"pod-a\"],\"explain\":\"yes\"}"),
        Call.post("/score", "{\"model_name\":\"" + MODEL + "\",\"block_keys\":" + asStrings + "}"),
        Call.post("/score", "{\"model\":\"" + MODEL + "\",\"token_ids\":[1,2"),
        Call.post("/score", scored + ",\"block_keys\":[1]}"),
        Call.post("/score", scored + ",\"record_ttl_ms\":3600000}"),
        Call.post("/score", "{\"model\":\"" + MODEL + "\",\"token_ids\":" + tooMany + "}"),
        Call.post("/score", scored + ",\"pods\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}"),
        Call.post("/score", scored + "}").anonymous(),
        Call.get("/score"),
        Call.post("/query", scored + "}"),
        Call.post("/query?format=mooncake", scored + ",\"instances\":[\"pod-a\"]}"),
        Call.post("/query", scored + ",\"format\":\"mooncake\",\"tenant_id\":\"t1\"}"),
        Call.post("/query", scored + ",\"block_size\":32}"),
        Call.post("/query", scored + ",\"instances\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}"),
        Call.post("/query", scored + "}").anonymous(),
        Call.get("/query"),
        Call.post("/observe", observed + "}"),
        Call.post("/observe", observed + ",\"token_ids\":" + tokens + ",\"rank\":1}"),
        Call.post("/observe", "{\"model\":\"" + MODEL + "\",\"pod\":\"pod-a\"}"),
        Call.post("/observe", observed + ",\"token_ids\":" + tooMany + "}"),
        Call.post("/observe", observed + "}").anonymous(),
        Call.get("/observe"),
        Call.get("/healthz").anonymous(),
        Call.post("/healthz", "{}"),
        Call.get("/readyz").anonymous(),
        Call.post("/readyz", "{}"),
        Call.get("/metrics"),
        Call.get("/metrics").anonymous(),
        Call.post("/metrics", "{}"),
        Call.get("/no-such-route"));
  }

  /** Requests a router answers 503 while Redis does not answer. */
  private static List<Call> unavailable(int[] prompt) {
    String scored = "{\"model\":\"" + MODEL + "\",\"token_ids\":" + ints(prompt);
    return List.of(
        Call.post("/score", scored + ",\"pods\":[\"pod-a\",\"pod-b\"],\"load\":{\"pod-b\":2}}"),
        Call.post("/score", scored + ",\"pods\":[\"pod-a\"],\"explain\":true}"),
        Call.post("/score", scored + "}"),
        Call.post("/query", scored + ",\"instances\":[\"pod-a\"]}"),
        Call.get("/readyz"));
  }

  /** Sends {@code call} and checks the answer against the document, softly. */
  private void check(SoftAssertions softly, URI base, Call call) throws Exception {
    HttpResponse<String> answer = send(base, call);
    String what = call.method() + " " + call.path() + " → " + answer.statusCode();
    String operation =
        "/paths/" + escape(call.route()) + "/" + call.method().toLowerCase(Locale.ROOT);
    if (doc.at(operation).isMissingNode()) {
      // No such route (404), or another method on a route (405): an error, as the document says.
      int expected = doc.at("/paths/" + escape(call.route())).isMissingNode() ? 404 : 405;
      softly.assertThat(answer.statusCode()).as(what).isEqualTo(expected);
      softly
          .assertThat(errors("/components/schemas/Error", JSON.readTree(answer.body())))
          .isEmpty();
      return;
    }
    String response = operation + "/responses/" + answer.statusCode();
    JsonNode described = resolve(doc.at(response));
    if (described.isMissingNode()) {
      softly.fail(what + ": the document has no such response; body " + answer.body());
      return;
    }
    met.add(response);
    for (Iterator<String> h = described.path("headers").fieldNames(); h.hasNext(); ) {
      String header = h.next();
      softly.assertThat(answer.headers().firstValue(header)).as(what + " " + header).isPresent();
    }
    Map.Entry<String, JsonNode> content = described.path("content").properties().iterator().next();
    String type = answer.headers().firstValue("Content-Type").orElse("");
    softly.assertThat(type).as(what + " content type").startsWith(content.getKey());
    JsonNode body =
        content.getKey().equals("application/json")
            ? JSON.readTree(answer.body())
            : TextNode.valueOf(answer.body());
    softly.assertThat(errors(pointer(content.getValue().path("schema")), body)).as(what).isEmpty();
    if (answer.statusCode() == 200 || answer.statusCode() == 503) {
      if (call.body() != null) {
        String request = operation + "/requestBody/content/application~1json/schema";
        softly
            .assertThat(errors(request, JSON.readTree(call.body())))
            .as(what + " request")
            .isEmpty();
      }
    }
  }

  /** The schema validator's errors for {@code value} against the schema at {@code pointer}. */
  private List<String> errors(String pointer, JsonNode value) {
    Schema schema = schemas.getSchema(SchemaLocation.of(BASE + "#" + pointer));
    return schema.validate(value).stream().map(Error::toString).toList();
  }

  /** Where a schema is: its $ref, or (inline) the pointer it was read from. */
  private String pointer(JsonNode schema) {
    if (schema.has("$ref")) {
      return schema.get("$ref").asText().substring(1);
    }
    return locate(doc, schema, "");
  }

  /** The JSON pointer of {@code target} (by identity) in {@code node}, or null. */
  private static String locate(JsonNode node, JsonNode target, String at) {
    if (node == target) {
      return at;
    }
    if (node.isContainerNode()) {
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        String found = locate(e.getValue(), target, at + "/" + escape(e.getKey()));
        if (found != null) {
          return found;
        }
      }
      for (int i = 0; i < node.size() && node.isArray(); i++) {
        String found = locate(node.get(i), target, at + "/" + i);
        if (found != null) {
          return found;
        }
      }
    }
    return null;
  }

  /** A response object, its $ref followed. */
  private JsonNode resolve(JsonNode response) {
    return response.has("$ref") ? doc.at(response.get("$ref").asText().substring(1)) : response;
  }

  /** Every (route, method, status) pointer the document lists, but the 500s. */
  private Set<String> documented() {
    Set<String> out = new TreeSet<>();
    doc.path("paths")
        .properties()
        .forEach(
            path ->
                path.getValue()
                    .properties()
                    .forEach(
                        op ->
                            op.getValue()
                                .path("responses")
                                .fieldNames()
                                .forEachRemaining(
                                    status -> {
                                      if (!status.equals("500")) {
                                        out.add(
                                            "/paths/"
                                                + escape(path.getKey())
                                                + "/"
                                                + op.getKey()
                                                + "/responses/"
                                                + status);
                                      }
                                    })));
    return out;
  }

  private static HttpResponse<String> send(URI base, Call call)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(base.resolve(call.path())).timeout(Duration.ofSeconds(10));
    if (call.authorized()) {
      request.header("Authorization", "Bearer " + TOKEN);
    }
    request.method(
        call.method(),
        call.body() == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(call.body()));
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static void storeOnPodA(String uri, long[] keys) {
    try (RedisConnector connector = RedisConnector.connect(uri);
        PrefixIndex index = PrefixIndex.builder().indexName("contract").redis(connector).build()) {
      StreamId stream = StreamId.of(MODEL, "pod-a");
      Lease lease = index.acquireLease(stream, "test", Duration.ofMinutes(1)).orElseThrow();
      index.apply(
          stream,
          KeyMode.ENGINE,
          1,
          lease,
          KvEventBatch.of(
              0, List.of(BlockStored.of(List.of(keys[0], keys[1]), null, List.of(), 16)), 0));
    }
  }

  private static JsonNode document() {
    try (InputStream in = ScoringServer.class.getResourceAsStream("/openapi.yaml")) {
      assertThat(in).as("openapi.yaml on the class path").isNotNull();
      return new ObjectMapper(new YAMLFactory()).readTree(in);
    } catch (IOException e) {
      throw new AssertionError("openapi.yaml does not parse", e);
    }
  }

  private static String ints(int[] values) {
    return IntStream.of(values)
        .mapToObj(String::valueOf)
        .collect(Collectors.joining(",", "[", "]"));
  }

  /** A JSON pointer token: {@code ~} and {@code /} escaped. */
  private static String escape(String token) {
    return token.replace("~", "~0").replace("/", "~1");
  }
}
