package io.kvindex.simulator.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.TestPods;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PodHttpServerTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String HELP =
      "# HELP vllm:engine_sleep_state Engine sleep state; awake = 0 means engine is sleeping;"
          + " awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1;"
          + " discard_all = 1 means sleep level 2.\n"
          + "# TYPE vllm:engine_sleep_state gauge\n";

  private static SimulatedPod pod(int dataParallelSize) {
    return SimulatedPod.start(
        TestPods.config()
            .http(true)
            .model("meta/llama")
            .dataParallelSize(dataParallelSize)
            .clock(() -> Instant.ofEpochSecond(1_732_912_345, 670_000_000))
            .build());
  }

  private static HttpResponse<String> get(SimulatedPod pod, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(pod.httpAddress().resolve(path)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> post(SimulatedPod pod, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(pod.httpAddress().resolve(path))
            .POST(HttpRequest.BodyPublishers.noBody())
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String expectedMetrics(int engines, String awake, String level1, String level2) {
    StringBuilder out = new StringBuilder(HELP);
    for (int e = 0; e < engines; e++) {
      String labels = "{model_name=\"meta/llama\",engine=\"" + e + "\",sleep_state=\"";
      out.append("vllm:engine_sleep_state")
          .append(labels)
          .append("awake\"} ")
          .append(awake)
          .append('\n');
      out.append("vllm:engine_sleep_state")
          .append(labels)
          .append("weights_offloaded\"} ")
          .append(level1)
          .append('\n');
      out.append("vllm:engine_sleep_state")
          .append(labels)
          .append("discard_all\"} ")
          .append(level2)
          .append('\n');
    }
    out.append("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n")
        .append("# TYPE vllm:cache_config_info gauge\n");
    for (int e = 0; e < engines; e++) {
      out.append(
              "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",engine=\"")
          .append(e)
          .append("\",num_cpu_blocks=\"None\",num_gpu_blocks=\"32768\",")
          .append(
              "kv_cache_size_tokens=\"524288\",prefix_caching_hash_algo=\"sha256_cbor\"} 1.0\n");
    }
    out.append(scheduler(engines, 0, 0));
    out.append("# HELP process_start_time_seconds Start time of the process since unix epoch in")
        .append(" seconds.\n# TYPE process_start_time_seconds gauge\n")
        .append("process_start_time_seconds 1732912345.67\n");
    return out.toString();
  }

  /** vLLM's scheduler gauges, as vllm/v1/metrics/loggers.py names and labels them. */
  private static String scheduler(int engines, int waiting, int running) {
    StringBuilder out = new StringBuilder();
    out.append("# HELP vllm:num_requests_running Number of requests in model execution batches.\n")
        .append("# TYPE vllm:num_requests_running gauge\n");
    for (int e = 0; e < engines; e++) {
      out.append("vllm:num_requests_running{model_name=\"meta/llama\",engine=\"")
          .append(e)
          .append("\"} ")
          .append(e == 0 ? running : 0)
          .append(".0\n");
    }
    out.append("# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n")
        .append("# TYPE vllm:num_requests_waiting gauge\n");
    for (int e = 0; e < engines; e++) {
      out.append("vllm:num_requests_waiting{model_name=\"meta/llama\",engine=\"")
          .append(e)
          .append("\"} ")
          .append(e == 0 ? waiting : 0)
          .append(".0\n");
    }
    return out.toString();
  }

  @Test
  void metrics_schedulerRequests_asVllmNamesThem() throws Exception {
    try (SimulatedPod pod = pod(2)) {
      assertThat(PodHttpServer.metrics(pod, 3, 2)).contains(scheduler(2, 3, 2));
      // Requests served over the OpenAI-compatible endpoint are counted while served, and only
      // then: once answered, nothing waits or runs.
      HttpResponse<String> served =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(pod.httpAddress().resolve("/v1/completions"))
                      .POST(
                          HttpRequest.BodyPublishers.ofString(
                              "{\"model\":\"meta/llama\",\"prompt\":[1,2,3],\"max_tokens\":2}"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(served.statusCode()).isEqualTo(200);
      assertThat(get(pod, "/metrics").body()).contains(scheduler(2, 0, 0));
    }
  }

  @Test
  void httpBind_anotherAddress_servesThere() throws Exception {
    try (SimulatedPod pod =
        SimulatedPod.start(
            TestPods.config().http(true).httpBind(new InetSocketAddress("127.0.0.2", 0)).build())) {
      assertThat(pod.httpAddress().getHost()).isEqualTo("127.0.0.2");
      assertThat(get(pod, "/metrics").body()).contains("vllm:engine_sleep_state{");
    }
  }

  @Test
  void metrics_awakeSleepOneAndSleepTwoAsVllmExportsThem() throws Exception {
    try (SimulatedPod pod = pod(2)) {
      assertThat(pod.httpAddress().getHost()).isEqualTo("127.0.0.1");
      HttpResponse<String> awake = get(pod, "/metrics");
      assertThat(awake.statusCode()).isEqualTo(200);
      assertThat(awake.headers().firstValue("Content-Type"))
          .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain; version=0.0.4"));
      assertThat(awake.body()).isEqualTo(expectedMetrics(2, "1.0", "0.0", "0.0"));

      assertThat(post(pod, "/sleep?level=1").statusCode()).isEqualTo(200);
      assertThat(get(pod, "/metrics").body()).isEqualTo(expectedMetrics(2, "0.0", "1.0", "0.0"));
      assertThat(JSON.readTree(get(pod, "/is_sleeping").body()).get("is_sleeping").asBoolean())
          .isTrue();

      assertThat(post(pod, "/wake_up").statusCode()).isEqualTo(200);
      assertThat(post(pod, "/sleep?level=2").statusCode()).isEqualTo(200);
      assertThat(get(pod, "/metrics").body()).isEqualTo(expectedMetrics(2, "0.0", "0.0", "1.0"));

      assertThat(post(pod, "/wake_up").statusCode()).isEqualTo(200);
      assertThat(JSON.readTree(get(pod, "/is_sleeping").body()).get("is_sleeping").asBoolean())
          .isFalse();
    }
  }

  @Test
  void sleep_defaultLevelIsOneAndBadLevelIsRejected() throws Exception {
    try (SimulatedPod pod = pod(1)) {
      assertThat(post(pod, "/sleep").statusCode()).isEqualTo(200);
      assertThat(pod.sleepLevel()).isEqualTo(1);
      assertThat(post(pod, "/sleep?level=7").statusCode()).isEqualTo(400);
      assertThat(post(pod, "/sleep?level=x").statusCode()).isEqualTo(400);
    }
  }

  @Test
  void resetPrefixCache_reportsSuccessAndKvBlocksShowsGroundTruth() throws Exception {
    try (SimulatedPod pod = pod(1)) {
      pod.submit(TestPods.request(1, 32, 1));
      JsonNode blocks = JSON.readTree(get(pod, "/kv_blocks").body());
      List<Long> listed = new ArrayList<>();
      blocks.at("/ranks/0/tiers/GPU").forEach(h -> listed.add(Long.parseUnsignedLong(h.asText())));
      assertThat(blocks.get("pod").asText()).isEqualTo("pod-0");
      assertThat(listed).containsExactlyInAnyOrderElementsOf(pod.cachedBlocks(0, "GPU"));
      assertThat(listed).hasSize(2);

      HttpResponse<String> reset = post(pod, "/reset_prefix_cache");
      assertThat(JSON.readTree(reset.body()).get("success").asBoolean()).isTrue();
      assertThat(JSON.readTree(get(pod, "/kv_blocks").body()).at("/ranks/0/tiers/GPU")).isEmpty();
    }
  }

  @Test
  void restart_overHttpRestartsTheSequence() throws Exception {
    try (SimulatedPod pod = pod(1)) {
      pod.submit(TestPods.request(1, 32, 1));
      assertThat(post(pod, "/restart").statusCode()).isEqualTo(200);
      assertThat(pod.nextSequence(0)).isZero();
      assertThat(get(pod, "/nope").statusCode()).isEqualTo(404);
    }
  }

  @Test
  void seconds_formatsLikePythonRepr() {
    assertThat(PodHttpServer.seconds(Instant.ofEpochSecond(1_700_000_000)))
        .isEqualTo("1700000000.0");
    assertThat(PodHttpServer.seconds(Instant.ofEpochSecond(1_700_000_000, 250_000_000)))
        .isEqualTo("1700000000.25");
  }
}
