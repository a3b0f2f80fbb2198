package io.kvindex.simulator.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.TestPods;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A simulated pod's OpenAI API answers as vLLM does, served by its engine. */
class OpenAiEndpointTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();

  private static SimulatedPod pod() {
    return SimulatedPod.start(TestPods.config().http(true).model("m").blockSize(16).build());
  }

  private static HttpResponse<String> post(SimulatedPod pod, String path, String body)
      throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(pod.httpAddress().resolve(path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String ids(int n) {
    return IntStream.range(0, n)
        .mapToObj(i -> Integer.toString(100 + i))
        .collect(Collectors.joining(","));
  }

  @Test
  void completions_reportCachedTokensAsVllmDoes() throws Exception {
    try (SimulatedPod pod = pod()) {
      String body = "{\"model\":\"m\",\"prompt\":[" + ids(50) + "],\"max_tokens\":3}";
      JsonNode first = JSON.readTree(post(pod, "/v1/completions", body).body());
      JsonNode again = JSON.readTree(post(pod, "/v1/completions", body).body());

      assertThat(first.path("object").asText()).isEqualTo("text_completion");
      assertThat(first.path("usage").path("prompt_tokens").asInt()).isEqualTo(50);
      assertThat(first.path("usage").path("completion_tokens").asInt()).isEqualTo(3);
      assertThat(first.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
          .isZero();
      assertThat(again.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
          .as("three full blocks, never the last token")
          .isEqualTo(48);
    }
  }

  @Test
  void tokenize_answersTheTokensServingUses() throws Exception {
    try (SimulatedPod pod = pod()) {
      String messages =
          "[{\"role\":\"system\",\"content\":\""
              + "be brief ".repeat(20)
              + "\"},"
              + "{\"role\":\"user\",\"content\":\"hello there\"}]";
      JsonNode tokens =
          JSON.readTree(
              post(pod, "/tokenize", "{\"model\":\"m\",\"messages\":" + messages + "}").body());
      List<Integer> ids = new ArrayList<>();
      tokens.path("tokens").forEach(t -> ids.add(t.asInt()));
      post(pod, "/v1/chat/completions", "{\"model\":\"m\",\"messages\":" + messages + "}");
      JsonNode again =
          JSON.readTree(
              post(pod, "/v1/chat/completions", "{\"model\":\"m\",\"messages\":" + messages + "}")
                  .body());

      assertThat(tokens.path("count").asInt()).isEqualTo(ids.size());
      assertThat(again.path("usage").path("prompt_tokens").asInt()).isEqualTo(ids.size());
      assertThat(again.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
          .isEqualTo((ids.size() - 1) / 16 * 16);
      assertThat(again.path("choices").get(0).path("message").path("role").asText())
          .isEqualTo("assistant");
    }
  }

  @Test
  void streams_endWithTheUsageChunkWhenAskedThenDone() throws Exception {
    try (SimulatedPod pod = pod()) {
      HttpResponse<String> r =
          post(
              pod,
              "/v1/completions",
              "{\"model\":\"m\",\"prompt\":\"a b c d\",\"max_tokens\":2,\"stream\":true,"
                  + "\"stream_options\":{\"include_usage\":true}}");

      assertThat(r.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
      List<String> events =
          List.of(r.body().split("\n\n")).stream().filter(e -> !e.isBlank()).toList();
      assertThat(events).hasSize(4);
      assertThat(events.get(3)).isEqualTo("data: [DONE]");
      JsonNode usage = JSON.readTree(events.get(2).substring("data: ".length()));
      assertThat(usage.path("choices")).isEmpty();
      assertThat(usage.path("usage").path("prompt_tokens").asInt()).isEqualTo(5);
      assertThat(JSON.readTree(events.get(0).substring(6)).path("usage").isNull()).isTrue();
    }
  }
}
