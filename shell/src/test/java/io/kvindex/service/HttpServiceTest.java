package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.service.HttpService.Probe;
import io.kvindex.service.HttpService.Response;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HttpServiceTest {
  private final HttpClient client = HttpClient.newHttpClient();
  private HttpService http;

  @AfterEach
  void stop() {
    if (http != null) {
      http.close();
    }
  }

  private HttpResponse<String> send(String method, String path, String body) throws Exception {
    return send(method, path, body, null);
  }

  private HttpResponse<String> send(String method, String path, String body, String authorization)
      throws Exception {
    HttpRequest.BodyPublisher publisher =
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body);
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(http.uri() + path)).method(method, publisher);
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String error(HttpResponse<String> response) throws Exception {
    return new ObjectMapper().readTree(response.body()).get("error").asText();
  }

  private static HttpService.Builder echo() {
    return HttpService.builder("test")
        .metrics(() -> "kvindex_up 1.0\n")
        .fallback(r -> Response.text(200, "text/plain", "routed " + new String(r.body())));
  }

  @Test
  void probesMetricsAndRoutes() throws Exception {
    AtomicBoolean ready = new AtomicBoolean(false);
    http =
        HttpService.builder("test")
            .metrics(() -> "kvindex_up 1.0\n")
            .ready(() -> ready.get() ? Probe.ok("ready") : Probe.failing("redis: not reachable"))
            .fallback(
                r ->
                    r.path().equals("/echo")
                        ? Response.text(200, "text/plain", new String(r.body()) + r.query("x"))
                        : Response.error(404, "no route " + r.path()))
            .maxBodyBytes(16)
            .start();
    assertThat(send("GET", "/healthz", null).body()).isEqualTo("ok\n");
    HttpResponse<String> notReady = send("GET", "/readyz", null);
    assertThat(notReady.statusCode()).isEqualTo(503);
    assertThat(notReady.body()).isEqualTo("redis: not reachable\n");
    ready.set(true);
    assertThat(send("GET", "/readyz", null).statusCode()).isEqualTo(200);
    HttpResponse<String> metrics = send("GET", "/metrics", null);
    assertThat(metrics.headers().firstValue("Content-Type")).hasValue(HttpService.PROMETHEUS);
    assertThat(metrics.body()).contains("kvindex_up 1.0");
    assertThat(send("POST", "/metrics", "").statusCode()).isEqualTo(405);
    assertThat(send("POST", "/echo?x=%21", "hello").body()).isEqualTo("hello!");
    HttpResponse<String> big = send("POST", "/echo", "x".repeat(17));
    assertThat(big.statusCode()).isEqualTo(413);
    assertThat(big.body()).contains("larger than 16 bytes");
    assertThat(send("GET", "/nope", null).statusCode()).isEqualTo(404);
  }

  @Test
  void handlerErrorsBecomeStatuses() throws Exception {
    http =
        HttpService.builder("test")
            .fallback(
                r -> {
                  if (r.path().equals("/bad")) {
                    throw new IllegalArgumentException("'x' must be a number");
                  }
                  throw new IllegalStateException("broken");
                })
            .start();
    HttpResponse<String> bad = send("GET", "/bad", null);
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).isEqualTo("{\"error\":\"'x' must be a number\"}");
    assertThat(send("GET", "/other", null).statusCode()).isEqualTo(500);
  }

  @Test
  void maxBodyBytes_answers413NamingTheSettingAndTakesABodyAtTheLimit() throws Exception {
    Setting limit = Setting.of("max-body-bytes", "16", "BYTES", "Largest body");
    http = echo().maxBodyBytes(16, limit).start();

    assertThat(send("POST", "/echo", "x".repeat(16)).statusCode()).isEqualTo(200);
    HttpResponse<String> big = send("POST", "/echo", "x".repeat(17));
    assertThat(big.statusCode()).isEqualTo(413);
    assertThat(error(big))
        .contains("larger than 16 bytes")
        .contains("max-body-bytes (--max-body-bytes, KVINDEX_MAX_BODY_BYTES)");
  }

  @Test
  void authToken_guardsEveryRouteButTheProbesAndMetrics() throws Exception {
    http = echo().authToken("s3cret").start();

    for (String wrong : new String[] {null, "Bearer nope", "Bearer s3cre", "Basic czNjcmV0", ""}) {
      HttpResponse<String> denied = send("POST", "/route", "hi", wrong);
      assertThat(denied.statusCode()).as(wrong).isEqualTo(401);
      assertThat(denied.headers().firstValue("WWW-Authenticate"))
          .get()
          .asString()
          .startsWith("Bearer");
      assertThat(error(denied)).contains("Authorization: Bearer");
    }
    assertThat(send("GET", "/nowhere", null).statusCode()).as("no route named").isEqualTo(401);
    HttpResponse<String> right = send("POST", "/route", "hi", "Bearer s3cret");
    assertThat(right.statusCode()).isEqualTo(200);
    assertThat(right.body()).isEqualTo("routed hi");
    assertThat(send("POST", "/route", "hi", "bearer s3cret").statusCode())
        .as("the scheme in any case")
        .isEqualTo(200);
    assertThat(send("GET", "/healthz", null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/readyz", null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/metrics", null).statusCode()).as("open by default").isEqualTo(200);
  }

  @Test
  void authMetrics_putsMetricsBehindTheTokenToo() throws Exception {
    http = echo().authToken("s3cret").authMetrics(true).start();

    assertThat(send("GET", "/metrics", null).statusCode()).isEqualTo(401);
    assertThat(send("GET", "/metrics", null, "Bearer wrong").statusCode()).isEqualTo(401);
    HttpResponse<String> metrics = send("GET", "/metrics", null, "Bearer s3cret");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body()).contains("kvindex_up 1.0");
    assertThat(send("GET", "/healthz", null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/readyz", null).statusCode()).isEqualTo(200);
  }

  @Test
  void authToken_refusesBeforeReadingTheBody() throws Exception {
    http = echo().authToken("s3cret").maxBodyBytes(4).start();

    assertThat(send("POST", "/route", "too long for the limit").statusCode()).isEqualTo(401);
    assertThat(send("POST", "/route", "too long", "Bearer s3cret").statusCode()).isEqualTo(413);
  }

  @Test
  void readAuthToken_trimsTheFileAndRefusesAnEmptyOne(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("token");
    Files.writeString(file, "  s3cret\n");
    assertThat(HttpService.readAuthToken(file)).isEqualTo("s3cret");

    Files.writeString(file, " \n");
    assertThatThrownBy(() -> HttpService.readAuthToken(file))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is empty");
    assertThatThrownBy(() -> HttpService.readAuthToken(dir.resolve("missing")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot read");
  }

  @Test
  void timeouts_areWholeSecondsOfAtLeastOne() {
    assertThatThrownBy(() -> HttpService.builder("t").readTimeout(Duration.ofMillis(1500)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("whole number of seconds");
    assertThatThrownBy(() -> HttpService.builder("t").idleTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idleTimeout");
  }

  @Test
  void timeouts_becomeTheJdkServersProperties() {
    assertThat(ServerTimeouts.properties(Duration.ofSeconds(10), Duration.ofSeconds(30)))
        .containsEntry("sun.net.httpserver.maxReqTime", "10")
        .containsEntry("sun.net.httpserver.maxRspTime", "10")
        .containsEntry("sun.net.httpserver.idleInterval", "30")
        .containsEntry("sun.net.httpserver.timerMillis", "1000")
        .containsEntry("sun.net.httpserver.clockTick", "2500");
    assertThat(ServerTimeouts.properties(Duration.ofSeconds(1), Duration.ofSeconds(2)))
        .containsEntry("sun.net.httpserver.timerMillis", "250")
        .containsEntry("sun.net.httpserver.clockTick", "250");
  }

  @Test
  void timeouts_areProcessWide() throws Exception {
    http = echo().start();
    assertThat(System.getProperty("sun.net.httpserver.maxReqTime"))
        .isEqualTo(String.valueOf(HttpService.DEFAULT_READ_TIMEOUT.toSeconds()));

    assertThatThrownBy(() -> echo().readTimeout(Duration.ofSeconds(7)).start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("process-wide")
        .hasMessageContaining("read 7s");
  }
}
