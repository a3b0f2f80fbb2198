package io.kvindex.demo;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Calls the router replicas' {@code POST /score} over HTTP, as a gateway not on the JVM would; the
 * replicas take turns. Thread-safe.
 */
public final class RouterClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<URI> routers;
  private final AtomicInteger next = new AtomicInteger();
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();

  public RouterClient(List<URI> routers) {
    if (routers.isEmpty()) {
      throw new IllegalArgumentException("routers must name at least one router");
    }
    this.routers = List.copyOf(routers);
  }

  /**
   * Scores a prompt over the candidate pods; with {@code load}, the answer carries the router's
   * {@code pick}. A 503 (index unavailable) is returned as is: its body still carries the pick.
   *
   * @throws IOException if the router cannot be reached or answers another error
   */
  public JsonNode score(int[] tokenIds, List<String> pods, Map<String, Integer> load)
      throws IOException, InterruptedException {
    return score(tokenIds, pods, load, null);
  }

  /**
   * As {@link #score(int[], List, Map)}, with the prompt tokens the gateway knows to be queued on
   * each pod ({@code queued_tokens}; null: none sent).
   */
  public JsonNode score(
      int[] tokenIds, List<String> pods, Map<String, Integer> load, Map<String, Long> queuedTokens)
      throws IOException, InterruptedException {
    return post("/score", body(tokenIds, pods, load, queuedTokens), true);
  }

  /**
   * Sends what the engine reported for a routed request back to a router ({@code POST /observe}):
   * the closed loop. With {@code tokenIds} (the router asked for the pod's prompts: {@code
   * blocks_wanted}), the prompt goes too. Returns the router's answer ({@code
   * prediction_error_blocks}, {@code outcome}, {@code blocks_wanted}).
   *
   * @throws IOException if the router cannot be reached or answers an error
   */
  JsonNode observe(String pod, int predictedBlocks, Map<String, Object> usage, int[] tokenIds)
      throws IOException, InterruptedException {
    JsonNode reported = JSON.valueToTree(usage);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (JsonGenerator out = JSON.getFactory().createGenerator(bytes)) {
      out.writeStartObject();
      out.writeStringField("model", Workloads.MODEL);
      out.writeStringField("pod", pod);
      out.writeNumberField("predicted_blocks", predictedBlocks);
      out.writeNumberField("prompt_tokens", reported.path("prompt_tokens").asInt());
      out.writeNumberField(
          "cached_tokens", reported.path("prompt_tokens_details").path("cached_tokens").asInt());
      if (tokenIds != null) {
        out.writeFieldName("token_ids");
        out.writeArray(tokenIds, 0, tokenIds.length);
      }
      out.writeEndObject();
    }
    return post("/observe", bytes.toByteArray(), false);
  }

  /**
   * POSTs a JSON body to the next router, round robin; returns its answer.
   *
   * @param unavailableToo whether a 503 (index unavailable, a body still given) is an answer
   * @throws IOException if the router cannot be reached or answers another error
   */
  private JsonNode post(String path, byte[] body, boolean unavailableToo)
      throws IOException, InterruptedException {
    URI router = routers.get(Math.floorMod(next.getAndIncrement(), routers.size()));
    HttpRequest post =
        HttpRequest.newBuilder(router.resolve(path))
            .timeout(Duration.ofSeconds(5))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(body))
            .build();
    HttpResponse<byte[]> response = http.send(post, HttpResponse.BodyHandlers.ofByteArray());
    int status = response.statusCode();
    if (status != 200 && !(unavailableToo && status == 503)) {
      throw new IOException(router + " answered " + status + ": " + new String(response.body()));
    }
    return JSON.readTree(response.body());
  }

  /**
   * The {@code /score} body, written field by field: a prompt's thousands of token ids would
   * otherwise each become a tree node first.
   */
  static byte[] body(
      int[] tokenIds, List<String> pods, Map<String, Integer> load, Map<String, Long> queuedTokens)
      throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + tokenIds.length * 7);
    try (JsonGenerator out = JSON.getFactory().createGenerator(bytes)) {
      out.writeStartObject();
      out.writeStringField("model", Workloads.MODEL);
      out.writeFieldName("token_ids");
      out.writeArray(tokenIds, 0, tokenIds.length);
      out.writeArrayFieldStart("pods");
      for (String pod : pods) {
        out.writeString(pod);
      }
      out.writeEndArray();
      if (load != null) {
        out.writeObjectFieldStart("load");
        for (String pod : pods) {
          out.writeNumberField(pod, load.getOrDefault(pod, 0));
        }
        out.writeEndObject();
      }
      if (queuedTokens != null) {
        out.writeObjectFieldStart("queued_tokens");
        for (String pod : pods) {
          out.writeNumberField(pod, queuedTokens.getOrDefault(pod, 0L));
        }
        out.writeEndObject();
      }
      out.writeEndObject();
    }
    return bytes.toByteArray();
  }
}
