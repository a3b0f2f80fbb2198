package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.Pick;
import io.kvindex.router.PodScore;
import io.kvindex.router.ScoreRequest;
import io.kvindex.router.Scores;
import io.kvindex.router.http.ScoringServer.Response;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Maps requests to the router and results to JSON. Thread-safe (the router is). */
final class Routes {
  static final String UNAVAILABLE =
      "index unavailable: Redis did not answer within the lookup budget; route by load";

  private final KvRouter router;
  private final PrometheusMeterRegistry registry;

  Routes(KvRouter router, PrometheusMeterRegistry registry) {
    this.router = router;
    this.registry = registry;
  }

  Response handle(String method, URI uri, byte[] body) {
    try {
      return route(method, uri, body);
    } catch (UnavailableException e) {
      return Response.error(503, e.getMessage());
    }
  }

  private Response route(String method, URI uri, byte[] body) {
    String path = uri.getPath();
    switch (path) {
      case "/score":
        return post(method) ? score(Json.parseObject(body)) : notAllowed("POST");
      case "/query":
        return post(method) ? query(Json.parseObject(body), uri.getQuery()) : notAllowed("POST");
      case "/metrics":
        return get(method)
            ? Response.text(200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape())
            : notAllowed("GET");
      case "/healthz":
        return get(method) ? status(200, "ok") : notAllowed("GET");
      case "/readyz":
        if (!get(method)) {
          return notAllowed("GET");
        }
        return router.indexReachable()
            ? status(200, "ready")
            : Response.error(503, "not ready: Redis does not answer a ping within one second");
      default:
        return Response.error(
            404,
            "no route "
                + path
                + "; routes: POST /score, POST /query, GET /metrics,"
                + " /healthz, /readyz");
    }
  }

  /**
   * {@code POST /score}: the library's scores, plus a pick when the body carries pod loads, which
   * is also recorded as a speculative route when the body asks for it ({@code record_ttl_ms}).
   */
  private Response score(ObjectNode body) {
    ScoreRequest request = scoreRequest(body, "pods", "candidate_pods");
    Integer recordTtlMs = Json.integer(body, "record_ttl_ms");
    if (recordTtlMs != null && recordTtlMs <= 0) {
      throw new BadRequestException("'record_ttl_ms' must be a positive number of milliseconds");
    }
    Scores scores = router.score(request);
    ObjectNode out = scoresJson(scores);
    JsonNode loads = Json.field(body, "load", "loads");
    if (loads != null && !request.candidatePods().isEmpty()) {
      Map<String, Double> byPod = Json.loads(loads, "load");
      LoadSignal signal = pod -> byPod.getOrDefault(pod, 0.0);
      Pick pick = router.pick(scores, request.candidatePods(), signal);
      out.set("pick", pickJson(pick));
      if (recordTtlMs != null && scores.indexAvailable()) {
        router.recordRoute(
            request.model(), pick.pod(), keys(request), Duration.ofMillis(recordTtlMs));
      }
    }
    if (!scores.indexAvailable()) {
      out.put("error", UNAVAILABLE);
      return Response.json(503, out);
    }
    return Response.json(200, out);
  }

  /**
   * {@code POST /query}: matched tokens per worker, Dynamo style or (on request) Mooncake style.
   */
  private Response query(ObjectNode body, String queryString) {
    ScoreRequest request = scoreRequest(body, "instances", "pods");
    Scores scores = router.score(request);
    if (!scores.indexAvailable()) {
      return Response.error(503, UNAVAILABLE);
    }
    Integer blockSize = Json.integer(body, "block_size");
    if (blockSize != null && blockSize != scores.blockSize()) {
      throw new BadRequestException(
          "block_size "
              + blockSize
              + " does not match the block size "
              + scores.blockSize()
              + " configured for model '"
              + request.model()
              + "'");
    }
    String tenant = Json.text(body, "tenant_id");
    return Response.json(
        200,
        mooncake(body, queryString)
            ? IndexerShapes.mooncake(scores, tenant == null ? "default" : tenant)
            : IndexerShapes.dynamo(scores));
  }

  private static boolean mooncake(JsonNode body, String queryString) {
    String format = Json.text(body, "format");
    if (format == null && queryString != null) {
      for (String pair : queryString.split("&")) {
        if (pair.startsWith("format=")) {
          format = pair.substring("format=".length());
        }
      }
    }
    if (format == null || format.equalsIgnoreCase("dynamo")) {
      return false;
    }
    if (format.equalsIgnoreCase("mooncake")) {
      return true;
    }
    throw new BadRequestException("'format' must be 'dynamo' or 'mooncake', got '" + format + "'");
  }

  private ScoreRequest scoreRequest(ObjectNode body, String podsField, String podsAlias) {
    String model = Json.requiredText(body, "model", "model_name");
    JsonNode tokens = Json.field(body, "token_ids", "tokens");
    JsonNode keys = Json.field(body, "block_keys");
    if ((tokens == null) == (keys == null)) {
      throw new BadRequestException("give exactly one of 'token_ids' and 'block_keys'");
    }
    List<String> pods = candidatePods(body, model, podsField, podsAlias);
    ScoreRequest request =
        tokens != null
            ? ScoreRequest.ofTokens(model, Json.tokenIds(tokens, "token_ids"), pods)
            : ScoreRequest.ofBlockKeys(model, Json.blockKeys(keys, "block_keys"), pods);
    return request
        .withLora(Json.text(body, "lora_name", "lora"))
        .withCacheSalt(Json.text(body, "cache_salt"));
  }

  /** The pods named in the body, else every pod of the model the index considers live. */
  private List<String> candidatePods(ObjectNode body, String model, String field, String alias) {
    JsonNode pods = Json.field(body, field, alias);
    if (pods != null) {
      return Json.strings(pods, field);
    }
    JsonNode one = Json.field(body, "instance_id");
    if (one != null) {
      return List.of(one.asText());
    }
    return router.livePods(model).orElseThrow(() -> new UnavailableException(UNAVAILABLE));
  }

  private long[] keys(ScoreRequest request) {
    return request.blockKeys() != null
        ? request.blockKeys()
        : router.blockKeys(
            request.model(), request.lora(), request.cacheSalt(), request.tokenIds());
  }

  static ObjectNode scoresJson(Scores scores) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("model", scores.model());
    out.put("block_size", scores.blockSize());
    out.put("queried_blocks", scores.queriedBlocks());
    out.put("outcome", scores.outcome().name().toLowerCase(Locale.ROOT));
    out.put("index_available", scores.indexAvailable());
    ObjectNode pods = out.putObject("pods");
    for (PodScore p : scores.pods()) {
      ObjectNode pod = pods.putObject(p.pod());
      pod.put("matched_blocks", p.matchedBlocks());
      pod.put("matched_tokens", p.matchedTokens());
      pod.put("gpu_blocks", p.gpuBlocks());
      pod.put("gpu_cpu_blocks", p.gpuCpuBlocks());
      pod.put("score", p.score());
      pod.put("speculative", p.speculative());
      ObjectNode ranks = pod.putObject("rank_blocks");
      p.rankBlocks().forEach((rank, blocks) -> ranks.put(String.valueOf(rank), blocks));
    }
    return out;
  }

  private static ObjectNode pickJson(Pick pick) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("pod", pick.pod());
    out.put("reason", pick.reason().name().toLowerCase(Locale.ROOT));
    out.put("matched_blocks", pick.matchedBlocks());
    out.put("speculative", pick.speculative());
    return out;
  }

  private static boolean post(String method) {
    return "POST".equals(method);
  }

  private static boolean get(String method) {
    return "GET".equals(method);
  }

  private static Response notAllowed(String allowed) {
    return Response.error(405, "method not allowed; use " + allowed);
  }

  /** The index did not answer within the lookup budget; answered with status 503. */
  static final class UnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UnavailableException(String message) {
      super(message);
    }
  }

  private static Response status(int code, String status) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("status", status);
    return Response.json(code, out);
  }
}
