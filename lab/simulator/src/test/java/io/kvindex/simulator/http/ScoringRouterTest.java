package io.kvindex.simulator.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.SimulatedFleet;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ScoringRouterTest {
  private static final InferenceRequest REQUEST =
      InferenceRequest.of(new int[] {1, 2, 3, 4}, new int[] {5});

  @Test
  void choose_routerAnswers_podItPicks() throws IOException {
    AtomicReference<JsonNode> asked = new AtomicReference<>();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/score",
        exchange -> {
          asked.set(new ObjectMapper().readTree(exchange.getRequestBody()));
          byte[] body =
              "{\"pick\":{\"pod\":\"pod-1\",\"reason\":\"longest_prefix\"}}"
                  .getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    server.start();
    try (SimulatedFleet fleet = fleet()) {
      PodRouter router =
          PodRouter.scoring(
              List.of(URI.create("http://127.0.0.1:" + server.getAddress().getPort())));

      SimulatedPod chosen = router.choose(REQUEST, fleet.pods());

      assertThat(chosen.name()).isEqualTo("pod-1");
      assertThat(asked.get().path("model").asText()).isEqualTo("sim-model");
      assertThat(asked.get().path("token_ids").toString()).isEqualTo("[1,2,3,4]");
      assertThat(asked.get().path("pods").toString()).isEqualTo("[\"pod-0\",\"pod-1\"]");
      assertThat(asked.get().path("load").path("pod-0").asInt()).isZero();
    } finally {
      server.stop(0);
    }
  }

  @Test
  void choose_withToken_sendsItAsBearer() throws IOException {
    AtomicReference<String> authorization = new AtomicReference<>();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/score",
        exchange -> {
          authorization.set(exchange.getRequestHeaders().getFirst("Authorization"));
          exchange.getRequestBody().readAllBytes();
          byte[] body = "{\"pick\":{\"pod\":\"pod-0\"}}".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    server.start();
    try (SimulatedFleet fleet = fleet()) {
      PodRouter router =
          PodRouter.scoring(
              List.of(URI.create("http://127.0.0.1:" + server.getAddress().getPort())), "s3cret");

      assertThat(router.choose(REQUEST, fleet.pods()).name()).isEqualTo("pod-0");
      assertThat(authorization.get()).isEqualTo("Bearer s3cret");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void choose_noRouterAnswers_leastLoaded() throws IOException {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    try (SimulatedFleet fleet = fleet()) {
      PodRouter router = PodRouter.scoring(List.of(URI.create("http://127.0.0.1:" + port)));
      Set<String> chosen = new HashSet<>();
      for (int i = 0; i < 4; i++) {
        chosen.add(router.choose(REQUEST, fleet.pods()).name());
      }
      assertThat(chosen).containsExactlyInAnyOrder("pod-0", "pod-1");
    }
  }

  @Test
  void scoring_notHttp_saysWhatToGive() {
    assertThatThrownBy(() -> PodRouter.scoring(List.of(URI.create("tcp://router:8190"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("http(s)://host:port");
  }

  private static SimulatedFleet fleet() {
    return SimulatedFleet.builder()
        .pods(2)
        .podTemplate(PodConfig.builder().http(false).build())
        .build();
  }
}
