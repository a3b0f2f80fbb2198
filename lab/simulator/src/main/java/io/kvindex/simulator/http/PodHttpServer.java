package io.kvindex.simulator.http;

import io.kvindex.service.HttpService;
import io.kvindex.service.HttpService.Request;
import io.kvindex.service.HttpService.Response;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import io.kvindex.simulator.engine.EngineTiming;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A pod's HTTP endpoint (127.0.0.1 and a free port unless configured), on the shared service
 * endpoint: vLLM's dev endpoints ({@code POST /reset_prefix_cache}, {@code POST /sleep?level=},
 * {@code POST /wake_up}, {@code GET /is_sleeping}), {@code GET /metrics} with {@code
 * vllm:engine_sleep_state}, {@code vllm:cache_config_info} (its {@code num_gpu_blocks}, the pod's
 * capacity, and {@code kv_cache_size_tokens}), {@code vllm:num_requests_running} and {@code
 * vllm:num_requests_waiting} (the requests of its OpenAI-compatible endpoint) and {@code
 * process_start_time_seconds} as vLLM exports them, and the simulator's own {@code GET /kv_blocks}
 * (ground truth) and {@code POST /restart}; and the OpenAI-compatible {@code POST /v1/completions},
 * {@code POST /v1/chat/completions} and {@code POST /tokenize} that a gateway forwards requests to
 * ({@link OpenAiEndpoint}). Thread-safe.
 */
public final class PodHttpServer implements AutoCloseable {
  private static final String SLEEP_HELP =
      "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake;"
          + " weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.";

  private final SimulatedPod pod;
  private final HttpService http;
  private final OpenAiEndpoint openAi;

  private PodHttpServer(SimulatedPod pod, HttpService http) {
    this.pod = pod;
    this.http = http;
    this.openAi = new OpenAiEndpoint(pod);
  }

  /** Starts a pod's endpoint on {@code address} (port 0: a free port). */
  public static PodHttpServer start(SimulatedPod pod, InetSocketAddress address) {
    PodHttpServer[] self = new PodHttpServer[1];
    try {
      HttpService http =
          HttpService.builder("sim-" + pod.name())
              .address(address)
              .threads(2)
              .queue(256)
              .metrics(
                  () ->
                      self[0] == null
                          ? metrics(pod)
                          : metrics(pod, self[0].openAi.waiting(), self[0].openAi.running()))
              .fallback(request -> self[0].handle(request))
              .start();
      self[0] = new PodHttpServer(pod, http);
      return self[0];
    } catch (IOException e) {
      throw new UncheckedIOException("pod " + pod.name() + ": cannot start its HTTP endpoint", e);
    }
  }

  public URI address() {
    return http.uri();
  }

  private Response handle(Request request) throws IOException {
    Response served = openAi.handle(request);
    if (served != null) {
      return served;
    }
    String path = request.path();
    String method = request.method();
    return switch (method + " " + path) {
      case "GET /is_sleeping" -> Response.json(200, Map.of("is_sleeping", pod.isSleeping()));
      case "POST /reset_prefix_cache" ->
          Response.json(200, Map.of("success", pod.resetPrefixCache()));
      case "POST /sleep" -> sleep(request.query("level"));
      case "POST /wake_up" -> {
        pod.wakeUp();
        yield Response.text(200, "text/plain", "");
      }
      case "POST /restart" -> {
        pod.restart();
        yield Response.text(200, "text/plain", "");
      }
      case "GET /kv_blocks" -> Response.json(200, kvBlocks(pod));
      default -> Response.error(404, "no such endpoint: " + method + " " + path);
    };
  }

  private Response sleep(String level) {
    try {
      pod.sleep(level == null ? 1 : Integer.parseInt(level));
    } catch (IllegalArgumentException e) {
      return Response.error(400, "level must be 0, 1 or 2, got " + level);
    }
    return Response.text(200, "text/plain", "");
  }

  /**
   * The Prometheus text vLLM serves for the sleep gauge, the cache configuration and the
   * scheduler's requests (none here), plus the process start time.
   */
  public static String metrics(SimulatedPod pod) {
    return metrics(pod, 0, 0);
  }

  /**
   * The Prometheus text vLLM serves for the sleep gauge, the cache configuration and the
   * scheduler's {@code waiting} and {@code running} requests, plus the process start time. The
   * requests are the pod's, on its first engine's series: which rank serves a request is known only
   * once it is served (vLLM's readers sum the engines' series).
   */
  public static String metrics(SimulatedPod pod, int waiting, int running) {
    StringBuilder out = new StringBuilder();
    out.append("# HELP vllm:engine_sleep_state ").append(SLEEP_HELP).append('\n');
    out.append("# TYPE vllm:engine_sleep_state gauge\n");
    Integer level = pod.sleepLevel();
    String[] states = {"awake", "weights_offloaded", "discard_all"};
    double[] values = {
      level == null ? 1 : 0,
      level != null && level == 1 ? 1 : 0,
      level != null && level == 2 ? 1 : 0
    };
    for (int engine = 0; engine < pod.endpoints().size(); engine++) {
      for (int s = 0; s < states.length; s++) {
        out.append("vllm:engine_sleep_state{model_name=\"")
            .append(escape(pod.model()))
            .append("\",engine=\"")
            .append(engine)
            .append("\",sleep_state=\"")
            .append(states[s])
            .append("\"} ")
            .append(values[s] == 1 ? "1.0" : "0.0")
            .append('\n');
      }
    }
    // vLLM's info gauge of its CacheConfig: every field a label, one series per engine.
    out.append("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n");
    out.append("# TYPE vllm:cache_config_info gauge\n");
    for (int engine = 0; engine < pod.endpoints().size(); engine++) {
      out.append("vllm:cache_config_info{block_size=\"")
          .append(pod.config().blockSize())
          .append("\",enable_prefix_caching=\"True\",engine=\"")
          .append(engine)
          .append("\",num_cpu_blocks=\"None\",num_gpu_blocks=\"")
          .append(pod.config().capacityBlocks())
          .append("\",kv_cache_size_tokens=\"")
          .append(kvCacheSizeTokens(pod.config()))
          .append("\",prefix_caching_hash_algo=\"sha256_cbor\"} 1.0\n");
    }
    // vLLM's scheduler gauges (vllm/v1/metrics/loggers.py), one series per engine.
    String[][] scheduler = {
      {"vllm:num_requests_running", "Number of requests in model execution batches."},
      {"vllm:num_requests_waiting", "Number of requests waiting to be processed."}
    };
    int[] counts = {running, waiting};
    for (int g = 0; g < scheduler.length; g++) {
      out.append("# HELP ")
          .append(scheduler[g][0])
          .append(' ')
          .append(scheduler[g][1])
          .append('\n');
      out.append("# TYPE ").append(scheduler[g][0]).append(" gauge\n");
      for (int engine = 0; engine < pod.endpoints().size(); engine++) {
        out.append(scheduler[g][0])
            .append("{model_name=\"")
            .append(escape(pod.model()))
            .append("\",engine=\"")
            .append(engine)
            .append("\"} ")
            .append(engine == 0 ? counts[g] : 0)
            .append(".0\n");
      }
    }
    out.append("# HELP process_start_time_seconds Start time of the process since unix epoch in")
        .append(" seconds.\n");
    out.append("# TYPE process_start_time_seconds gauge\n");
    out.append("process_start_time_seconds ").append(seconds(pod.processStartTime())).append('\n');
    return out.toString();
  }

  /**
   * The pod's {@code kv_cache_size_tokens} as vLLM computes it ({@link
   * ModelKind#kvCacheSizeTokens}), taking the longest request the pod's cache holds in full
   * attention ({@code capacityBlocks × blockSize}) as its {@code max_model_len} and vLLM's default
   * {@code max_num_batched_tokens}: a dense model's is its whole cache, a hybrid's less.
   */
  public static long kvCacheSizeTokens(PodConfig config) {
    int maxModelLen = config.capacityBlocks() * config.blockSize();
    return config
        .modelKind()
        .kvCacheSizeTokens(
            config.capacityBlocks(),
            config.blockSize(),
            maxModelLen,
            EngineTiming.DEFAULT.maxNumBatchedTokens());
  }

  /** Python's repr of a float of Unix seconds, e.g. {@code 1732912345.67}. */
  public static String seconds(Instant instant) {
    double value = instant.getEpochSecond() + instant.getNano() / 1e9;
    String plain = new BigDecimal(Double.toString(value)).toPlainString();
    return plain.contains(".") ? plain : plain + ".0";
  }

  private static String escape(String label) {
    return label.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  public static Map<String, Object> kvBlocks(SimulatedPod pod) {
    List<Map<String, Object>> ranks = new ArrayList<>();
    for (StreamEndpoints e : pod.endpoints()) {
      Map<String, Object> tiers = new LinkedHashMap<>();
      for (Map.Entry<String, Set<Long>> tier : pod.cachedBlocks(e.rank()).entrySet()) {
        tiers.put(tier.getKey(), tier.getValue().stream().map(Long::toUnsignedString).toList());
      }
      Map<String, Object> rank = new LinkedHashMap<>();
      rank.put("rank", e.rank());
      rank.put("tiers", tiers);
      ranks.add(rank);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("pod", pod.name());
    out.put("model", pod.model());
    out.put("ranks", ranks);
    return out;
  }

  @Override
  public void close() {
    http.close();
  }
}
