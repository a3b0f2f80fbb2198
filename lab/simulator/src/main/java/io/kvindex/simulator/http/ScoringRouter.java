package io.kvindex.simulator.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes through kvindex's HTTP scoring service, as a gateway would: {@code POST /score} on the
 * router replicas in turn, with the prompt's token ids, the candidate pods and their load (the
 * requests each got among the last {@value #LOAD_WINDOW}); the request goes to the pod the router
 * picks, with the routers' auth token when given. When no router answers, the least loaded
 * candidate. Thread-safe (one decision at a time).
 */
public final class ScoringRouter implements PodRouter {
  private static final Logger log = LoggerFactory.getLogger(ScoringRouter.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final int LOAD_WINDOW = 64;

  private final List<URI> routers;
  private final String token;
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();
  private final Deque<String> recent = new ArrayDeque<>();
  private final Map<String, Integer> load = new HashMap<>();
  private int next;
  private long failures;

  /**
   * Routes through {@code routers} (base URLs), sending {@code Authorization: Bearer <token>}
   * unless {@code token} is null.
   */
  public ScoringRouter(List<URI> routers, String token) {
    if (routers.isEmpty()) {
      throw new IllegalArgumentException("name at least one router URL, e.g. http://router:8190");
    }
    for (URI r : routers) {
      if (!"http".equals(r.getScheme()) && !"https".equals(r.getScheme())) {
        throw new IllegalArgumentException("router URL must be http(s)://host:port, got " + r);
      }
    }
    this.routers = List.copyOf(routers);
    this.token = token;
  }

  @Override
  public synchronized SimulatedPod choose(InferenceRequest request, List<SimulatedPod> pods) {
    SimulatedPod chosen = null;
    URI router = routers.get(next++ % routers.size());
    try {
      String pick = pick(router, request, pods);
      chosen = pods.stream().filter(p -> p.name().equals(pick)).findFirst().orElse(null);
    } catch (IOException e) {
      if (failures++ % 100 == 0) {
        log.warn("router {} did not answer ({}); routing by load", router, e.getMessage());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (chosen == null) {
      chosen = leastLoaded(pods);
    }
    routed(chosen.name());
    return chosen;
  }

  private String pick(URI router, InferenceRequest request, List<SimulatedPod> pods)
      throws IOException, InterruptedException {
    HttpRequest.Builder post =
        HttpRequest.newBuilder(router.resolve("/score"))
            .timeout(Duration.ofSeconds(5))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(body(request, pods)));
    if (token != null) {
      post.header("Authorization", "Bearer " + token);
    }
    HttpResponse<byte[]> response =
        http.send(post.build(), HttpResponse.BodyHandlers.ofByteArray());
    if (response.statusCode() == 401) {
      throw new IOException(
          "HTTP 401: the router wants its auth token; give the sim --router-token-file, a file"
              + " holding the routers' --auth-token-file secret");
    }
    // 503 is "index unavailable": the body still carries the router's load-based pick.
    if (response.statusCode() != 200 && response.statusCode() != 503) {
      throw new IOException("HTTP " + response.statusCode() + ": " + new String(response.body()));
    }
    JsonNode pod = JSON.readTree(response.body()).path("pick").path("pod");
    if (!pod.isTextual()) {
      throw new IOException("the answer carries no pick.pod");
    }
    return pod.asText();
  }

  private byte[] body(InferenceRequest request, List<SimulatedPod> pods) throws IOException {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", pods.get(0).model());
    if (request.loraName() != null) {
      body.put("lora_name", request.loraName());
    }
    if (request.cacheSalt() != null) {
      body.put("cache_salt", request.cacheSalt());
    }
    ArrayNode tokens = body.putArray("token_ids");
    for (int t : request.promptTokens()) {
      tokens.add(t);
    }
    ArrayNode candidates = body.putArray("pods");
    ObjectNode loads = body.putObject("load");
    for (SimulatedPod p : pods) {
      candidates.add(p.name());
      loads.put(p.name(), load.getOrDefault(p.name(), 0));
    }
    return JSON.writeValueAsBytes(body);
  }

  private void routed(String pod) {
    recent.addLast(pod);
    load.merge(pod, 1, Integer::sum);
    if (recent.size() > LOAD_WINDOW) {
      load.merge(recent.removeFirst(), -1, Integer::sum);
    }
  }

  private SimulatedPod leastLoaded(List<SimulatedPod> pods) {
    SimulatedPod best = pods.get(0);
    for (SimulatedPod p : pods) {
      if (load.getOrDefault(p.name(), 0) < load.getOrDefault(best.name(), 0)) {
        best = p;
      }
    }
    return best;
  }
}
