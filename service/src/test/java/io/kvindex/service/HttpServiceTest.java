package io.kvindex.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.service.HttpService.Probe;
import io.kvindex.service.HttpService.Response;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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
    HttpRequest.BodyPublisher publisher =
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body);
    return client.send(
        HttpRequest.newBuilder(URI.create(http.uri() + path)).method(method, publisher).build(),
        HttpResponse.BodyHandlers.ofString());
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
}
