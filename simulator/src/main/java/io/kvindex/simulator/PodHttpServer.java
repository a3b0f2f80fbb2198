package io.kvindex.simulator;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pod's HTTP endpoint on 127.0.0.1 (random port): vLLM's dev endpoints ({@code POST
 * /reset_prefix_cache}, {@code POST /sleep?level=}, {@code POST /wake_up}, {@code GET
 * /is_sleeping}), {@code GET /metrics} with {@code vllm:engine_sleep_state} and {@code
 * process_start_time_seconds} as vLLM exports them, and the simulator's own {@code GET /kv_blocks}
 * (ground truth) and {@code POST /restart}. Thread-safe.
 */
final class PodHttpServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PodHttpServer.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SLEEP_HELP =
      "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake;"
          + " weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.";

  private final SimulatedPod pod;
  private final HttpServer server;
  private final ThreadPoolExecutor executor;

  private PodHttpServer(SimulatedPod pod, HttpServer server, ThreadPoolExecutor executor) {
    this.pod = pod;
    this.server = server;
    this.executor = executor;
  }

  static PodHttpServer start(SimulatedPod pod) {
    try {
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      ThreadPoolExecutor executor =
          new ThreadPoolExecutor(
              1,
              1,
              0,
              TimeUnit.SECONDS,
              new ArrayBlockingQueue<>(256),
              r -> {
                Thread t = new Thread(r, "sim-http-" + pod.name());
                t.setDaemon(true);
                return t;
              },
              new ThreadPoolExecutor.AbortPolicy());
      server.setExecutor(executor);
      PodHttpServer http = new PodHttpServer(pod, server, executor);
      server.createContext("/", http::handle);
      server.start();
      return http;
    } catch (IOException e) {
      throw new UncheckedIOException("pod " + pod.name() + ": cannot start its HTTP endpoint", e);
    }
  }

  URI address() {
    InetSocketAddress a = server.getAddress();
    return URI.create("http://" + a.getAddress().getHostAddress() + ":" + a.getPort());
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getPath();
      String method = exchange.getRequestMethod();
      switch (method + " " + path) {
        case "GET /metrics" ->
            send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", metrics(pod));
        case "GET /is_sleeping" -> sendJson(exchange, Map.of("is_sleeping", pod.isSleeping()));
        case "POST /reset_prefix_cache" ->
            sendJson(exchange, Map.of("success", pod.resetPrefixCache()));
        case "POST /sleep" -> sleep(exchange);
        case "POST /wake_up" -> {
          pod.wakeUp();
          send(exchange, 200, "text/plain", "");
        }
        case "POST /restart" -> {
          pod.restart();
          send(exchange, 200, "text/plain", "");
        }
        case "GET /kv_blocks" -> sendJson(exchange, kvBlocks(pod));
        default ->
            sendJson(exchange, 404, Map.of("error", "no such endpoint: " + method + " " + path));
      }
    } catch (RuntimeException e) {
      LOG.warn("pod {}: HTTP request failed", pod.name(), e);
    }
  }

  private void sleep(HttpExchange exchange) throws IOException {
    String level = query(exchange.getRequestURI(), "level");
    int parsed;
    try {
      parsed = level == null ? 1 : Integer.parseInt(level);
      pod.sleep(parsed);
    } catch (IllegalArgumentException e) {
      sendJson(exchange, 400, Map.of("error", "level must be 0, 1 or 2, got " + level));
      return;
    }
    send(exchange, 200, "text/plain", "");
  }

  /** The Prometheus text vLLM serves for the sleep gauge, plus the process start time. */
  static String metrics(SimulatedPod pod) {
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
    out.append("# HELP process_start_time_seconds Start time of the process since unix epoch in")
        .append(" seconds.\n");
    out.append("# TYPE process_start_time_seconds gauge\n");
    out.append("process_start_time_seconds ").append(seconds(pod.processStartTime())).append('\n');
    return out.toString();
  }

  /** Python's repr of a float of Unix seconds, e.g. {@code 1732912345.67}. */
  static String seconds(Instant instant) {
    double value = instant.getEpochSecond() + instant.getNano() / 1e9;
    String plain = new BigDecimal(Double.toString(value)).toPlainString();
    return plain.contains(".") ? plain : plain + ".0";
  }

  private static String escape(String label) {
    return label.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  static Map<String, Object> kvBlocks(SimulatedPod pod) {
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

  static String query(URI uri, String name) {
    String q = uri.getRawQuery();
    if (q == null) {
      return null;
    }
    for (String pair : q.split("&")) {
      int eq = pair.indexOf('=');
      String key = eq < 0 ? pair : pair.substring(0, eq);
      if (key.equals(name)) {
        return eq < 0
            ? ""
            : java.net.URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  private static void sendJson(HttpExchange exchange, Object body) throws IOException {
    sendJson(exchange, 200, body);
  }

  private static void sendJson(HttpExchange exchange, int status, Object body) throws IOException {
    send(exchange, status, "application/json", JSON.writeValueAsString(body));
  }

  private static void send(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    if (bytes.length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
