package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The scoring service behind a shared secret: routes need it, probes never, metrics on request; and
 * authentication fails closed: beyond loopback a server without a token refuses to start, unless
 * told it may, with a setting whose name says it is insecure.
 */
@UsesRedis
class ScoringServerAuthTest {
  private static final String TOKEN = "s3cret-token";
  private static final String SCORE =
      "{\"model\":\"m\",\"token_ids\":[1,2,3],\"pods\":[\"pod-a\"]}";
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static KvRouter router;
  private static PrometheusMeterRegistry registry;
  private static ScoringServer metricsOpen;
  private static ScoringServer metricsClosed;

  private static final String OBSERVE =
      "{\"model\":\"m\",\"pod\":\"pod-a\",\"predicted_blocks\":0,\"prompt_tokens\":48,"
          + "\"cached_tokens\":0}";

  @BeforeAll
  static void start(RedisStandalone redis) throws IOException {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString())) {
      PrefixIndex.builder().indexName("auth").redis(connector).build().close(); // an ingester's
    }
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    router =
        KvRouter.builder()
            .redisUri(redis.uri().toURI().toString())
            .indexName("auth")
            .model("m", ModelKeys.token(16))
            .lookupBudget(Duration.ofSeconds(1))
            .meterRegistry(registry)
            .build();
    metricsOpen = server().start(router, registry);
    metricsClosed = server().authMetrics(true).start(router, registry);
  }

  private static ScoringServer.Builder server() {
    return ScoringServer.builder()
        .address(new InetSocketAddress("127.0.0.1", 0))
        .threads(1)
        .authToken(TOKEN);
  }

  @AfterAll
  static void stop() {
    metricsOpen.close();
    metricsClosed.close();
    router.close();
  }

  private static HttpResponse<String> send(
      ScoringServer server, String method, String path, String body, String authorization)
      throws IOException, InterruptedException {
    URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    HttpRequest.Builder request =
        HttpRequest.newBuilder(uri)
            .timeout(Duration.ofSeconds(10))
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body));
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static void assertUnauthorized(HttpResponse<String> response) throws IOException {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(401);
    assertThat(response.headers().firstValue("WWW-Authenticate"))
        .get()
        .asString()
        .startsWith("Bearer");
    assertThat(new ObjectMapper().readTree(response.body()).get("error").asText())
        .contains("Authorization: Bearer <token>")
        .doesNotContain(TOKEN);
  }

  @Test
  void routes_needTheToken() throws Exception {
    assertUnauthorized(send(metricsOpen, "POST", "/score", SCORE, null));
    assertUnauthorized(send(metricsOpen, "POST", "/score", SCORE, "Bearer wrong"));
    assertUnauthorized(send(metricsOpen, "POST", "/score", SCORE, "Bearer " + TOKEN + "x"));
    assertUnauthorized(send(metricsOpen, "POST", "/score", SCORE, TOKEN));
    assertUnauthorized(send(metricsOpen, "POST", "/query", SCORE, null));
    assertUnauthorized(send(metricsOpen, "POST", "/observe", OBSERVE, null));
    assertUnauthorized(send(metricsOpen, "POST", "/observe", OBSERVE, "Bearer wrong"));
    assertUnauthorized(send(metricsOpen, "GET", "/nowhere", null, null));

    HttpResponse<String> right = send(metricsOpen, "POST", "/score", SCORE, "Bearer " + TOKEN);
    assertThat(right.statusCode()).as(right.body()).isEqualTo(200);
    assertThat(send(metricsOpen, "POST", "/query", SCORE, "Bearer " + TOKEN).statusCode())
        .isEqualTo(200);
    HttpResponse<String> observed =
        send(metricsOpen, "POST", "/observe", OBSERVE, "Bearer " + TOKEN);
    assertThat(observed.statusCode()).as(observed.body()).isEqualTo(200);
  }

  @Test
  void beyondLoopback_withoutToken_refusesToStart() {
    ScoringServer.Builder open =
        ScoringServer.builder().address(new InetSocketAddress("0.0.0.0", 0)).threads(1);

    assertThatThrownBy(() -> open.start(router, registry).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("0.0.0.0")
        .hasMessageContaining("not a loopback address")
        .hasMessageContaining("auth-token-file (--auth-token-file, KVINDEX_AUTH_TOKEN_FILE)")
        .hasMessageContaining("insecure-no-auth (--insecure-no-auth, KVINDEX_INSECURE_NO_AUTH)");
    assertThatThrownBy(
            () ->
                ScoringServer.builder()
                    .address(new InetSocketAddress("0.0.0.0", 0))
                    .authToken(TOKEN)
                    .insecureNoAuth(true)
                    .config())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("choose one");
  }

  @Test
  void beyondLoopback_withTokenOrToldInsecure_isConfigured() {
    InetSocketAddress everywhere = new InetSocketAddress("0.0.0.0", 8190);
    assertThat(ScoringServer.builder().address(everywhere).authToken(TOKEN).config().authToken())
        .isEqualTo(TOKEN);
    assertThat(
            ScoringServer.builder().address(everywhere).insecureNoAuth(true).config().authToken())
        .isNull();
    for (String loopback : new String[] {"127.0.0.1", "127.0.0.2", "::1", "localhost"}) {
      assertThat(
              ScoringServer.builder()
                  .address(new InetSocketAddress(loopback, 8190))
                  .config()
                  .authToken())
          .as(loopback + " needs no token")
          .isNull();
    }
  }

  @Test
  void probes_stayOpen() throws Exception {
    for (ScoringServer server : new ScoringServer[] {metricsOpen, metricsClosed}) {
      assertThat(send(server, "GET", "/healthz", null, null).statusCode()).isEqualTo(200);
      assertThat(send(server, "GET", "/readyz", null, null).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void metrics_openByDefault_closedWithAuthMetrics() throws Exception {
    HttpResponse<String> open = send(metricsOpen, "GET", "/metrics", null, null);
    assertThat(open.statusCode()).isEqualTo(200);
    assertThat(open.body()).contains("kvindex_router_lookup_seconds");

    assertUnauthorized(send(metricsClosed, "GET", "/metrics", null, null));
    assertUnauthorized(send(metricsClosed, "GET", "/metrics", null, "Bearer wrong"));
    HttpResponse<String> closed = send(metricsClosed, "GET", "/metrics", null, "Bearer " + TOKEN);
    assertThat(closed.statusCode()).isEqualTo(200);
    assertThat(closed.body()).contains("kvindex_router_lookup_seconds");
  }
}
