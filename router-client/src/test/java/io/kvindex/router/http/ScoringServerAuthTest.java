package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
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

/** The scoring service behind a shared secret: routes need it, probes never, metrics on request. */
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

  @BeforeAll
  static void start(RedisStandalone redis) throws IOException {
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
    assertUnauthorized(send(metricsOpen, "GET", "/nowhere", null, null));

    HttpResponse<String> right = send(metricsOpen, "POST", "/score", SCORE, "Bearer " + TOKEN);
    assertThat(right.statusCode()).as(right.body()).isEqualTo(200);
    assertThat(send(metricsOpen, "POST", "/query", SCORE, "Bearer " + TOKEN).statusCode())
        .isEqualTo(200);
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
