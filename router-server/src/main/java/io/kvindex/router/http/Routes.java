package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.common.KvIndexException;
import io.kvindex.index.PodLiveness;
import io.kvindex.index.PodMatch;
import io.kvindex.router.Explanation;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.Pick;
import io.kvindex.router.ScoreRequest;
import io.kvindex.router.Scores;
import io.kvindex.service.HttpService.Request;
import io.kvindex.service.HttpService.Response;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Maps requests to the router and results to JSON. Thread-safe (the router is). */
final class Routes {
  private static final Logger log = LoggerFactory.getLogger(Routes.class);

  static final String UNAVAILABLE =
      "index unavailable: Redis did not answer within the lookup budget; route by load";

  private final KvRouter router;
  private final Limits limits;

  Routes(KvRouter router, Limits limits) {
    this.router = router;
    this.limits = limits;
  }

  /** Answers the routes of the scoring service; the service endpoint has the rest. */
  Response handle(Request request) {
    try {
      return switch (request.path()) {
        case "/score" ->
            post(request.method()) ? score(Json.parseObject(request.body())) : notAllowed("POST");
        case "/query" ->
            post(request.method())
                ? query(Json.parseObject(request.body()), request.uri().getQuery())
                : notAllowed("POST");
        case "/observe" ->
            post(request.method()) ? observe(Json.parseObject(request.body())) : notAllowed("POST");
        default ->
            Response.error(
                404,
                "no route "
                    + request.path()
                    + "; routes: POST /score, POST /query, POST /observe, GET /metrics, /healthz,"
                    + " /readyz");
      };
    } catch (Limits.TooLargeException e) {
      return Response.error(413, e.getMessage());
    } catch (KvIndexException e) {
      log.warn("request {} {} failed", request.method(), request.uri(), e);
      return Response.error(500, e.getMessage());
    }
  }

  /**
   * {@code POST /score}: the library's scores, plus a pick when the body carries pod loads, which
   * is also recorded as a speculative route when the body asks for it ({@code record_ttl_ms}): the
   * prompt's first blocks, up to the block-key limit, so one call writes a bounded number.
   */
  private Response score(ObjectNode body) {
    Integer recordTtlMs = Json.integer(body, "record_ttl_ms");
    Duration recordTtl = recordTtlMs == null ? null : limits.recordTtl(recordTtlMs);
    Optional<ScoreRequest> asked = scoreRequest(body, "pods", "candidate_pods");
    if (asked.isEmpty()) {
      return Response.error(503, UNAVAILABLE);
    }
    ScoreRequest request = asked.get();
    Scores scores = router.score(request);
    ObjectNode out = scoresJson(scores);
    JsonNode loads = Json.field(body, "load", "loads");
    boolean explain = Json.flag(body, "explain");
    Map<String, Double> byPod = loads == null ? Map.of() : Json.loads(loads, "load");
    JsonNode queued = Json.field(body, "queued_tokens");
    Map<String, Double> queuedByPod =
        queued == null ? Map.of() : Json.loads(queued, "queued_tokens");
    LoadSignal signal =
        new LoadSignal() {
          @Override
          public double load(String pod) {
            return byPod.getOrDefault(pod, 0.0);
          }

          @Override
          public double queuedTokens(String pod) {
            return queuedByPod.getOrDefault(pod, Double.NaN);
          }
        };
    if (explain && !request.candidatePods().isEmpty()) {
      out.set("explain", explainJson(router.explain(scores, request.candidatePods(), signal)));
    }
    if (loads != null && !request.candidatePods().isEmpty()) {
      Pick pick = router.pick(scores, request.candidatePods(), signal);
      out.set("pick", pickJson(pick));
      if (recordTtl != null && scores.indexAvailable()) {
        router.recordRoute(
            request.model(), pick.pod(), limits.recorded(scores.blockKeys()), recordTtl);
      }
    }
    if (!scores.indexAvailable()) {
      out.put("error", UNAVAILABLE);
      return Response.json(503, out);
    }
    return Response.json(200, out);
  }

  /** {@code POST /observe}: the closed loop's input, see {@link ObserveRequests}. */
  private Response observe(ObjectNode body) {
    ObserveRequests.Parsed parsed = ObserveRequests.parse(body, limits, router);
    int error = router.observe(parsed.observation());
    return Response.json(200, ObserveRequests.answer(error, parsed.blocksWanted()));
  }

  /**
   * {@code POST /query}: matched tokens per worker, Dynamo style or (on request) Mooncake style.
   */
  private Response query(ObjectNode body, String queryString) {
    Optional<ScoreRequest> asked = scoreRequest(body, "instances", "pods");
    if (asked.isEmpty()) {
      return Response.error(503, UNAVAILABLE);
    }
    ScoreRequest request = asked.get();
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

  /** The request the body asks, or empty when its candidates cannot be listed (Redis down). */
  private Optional<ScoreRequest> scoreRequest(ObjectNode body, String podsField, String alias) {
    String model = limits.name(Json.requiredText(body, "model", "model_name"), "model");
    String lora = limits.name(Json.text(body, "lora_name", "lora"), "lora_name");
    JsonNode tokens = Json.field(body, "token_ids", "tokens");
    JsonNode keys = Json.field(body, "block_keys");
    if ((tokens == null) == (keys == null)) {
      throw new BadRequestException("give exactly one of 'token_ids' and 'block_keys'");
    }
    limits.tokens(tokens, "token_ids");
    limits.blockKeys(keys, "block_keys");
    return candidatePods(body, model, podsField, alias)
        .map(
            pods ->
                new ScoreRequest(
                    model,
                    lora,
                    Json.text(body, "cache_salt"),
                    tokens == null ? null : Json.tokenIds(tokens, "token_ids"),
                    keys == null ? null : Json.blockKeys(keys, "block_keys"),
                    pods));
  }

  /** The pods named in the body, else every pod of the model the index considers live. */
  private Optional<List<String>> candidatePods(
      ObjectNode body, String model, String field, String alias) {
    JsonNode pods = Json.field(body, field, alias);
    if (pods != null) {
      limits.candidates(pods, field);
      List<String> named = Json.strings(pods, field);
      for (int i = 0; i < named.size(); i++) {
        limits.name(named.get(i), field + "[" + i + "]");
      }
      return Optional.of(named);
    }
    JsonNode one = Json.field(body, "instance_id");
    if (one != null) {
      return Optional.of(List.of(limits.name(one.asText(), "instance_id")));
    }
    return router.livePods(model);
  }

  static ObjectNode scoresJson(Scores scores) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("model", scores.model());
    out.put("block_size", scores.blockSize());
    out.put("queried_blocks", scores.queriedBlocks());
    out.put("outcome", scores.outcome().name().toLowerCase(Locale.ROOT));
    out.put("index_available", scores.indexAvailable());
    ObjectNode pods = out.putObject("pods");
    for (PodMatch p : scores.pods()) {
      ObjectNode pod = pods.putObject(p.pod());
      pod.put("matched_blocks", p.depth());
      pod.put("matched_tokens", scores.matchedTokens(p));
      pod.put("gpu_blocks", p.gpuDepth());
      pod.put("gpu_cpu_blocks", p.gpuCpuDepth());
      pod.put("score", p.score());
      pod.put("speculative", p.speculative());
      ObjectNode ranks = pod.putObject("rank_blocks");
      p.rankDepths().forEach((rank, blocks) -> ranks.put(String.valueOf(rank), blocks));
    }
    return out;
  }

  /**
   * Per candidate: its depth in blocks per tier, the load the policy saw, the policy's verdict, and
   * the pod record the lookup counted its blocks under.
   */
  private static ObjectNode explainJson(Explanation explanation) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.set("pick", pickJson(explanation.pick()));
    ObjectNode candidates = out.putObject("candidates");
    for (Explanation.Candidate c : explanation.candidates()) {
      ObjectNode pod = candidates.putObject(c.pod());
      ObjectNode depth = pod.putObject("depth_blocks");
      depth.put("gpu", c.match().gpuDepth());
      depth.put("gpu_cpu", c.match().gpuCpuDepth());
      depth.put("any_tier", c.match().depth());
      pod.put("score", c.match().score());
      pod.put("speculative", c.match().speculative());
      if (!c.match().groupTokens().isEmpty()) {
        // A hybrid model: each cache group's own hit, in tokens, beside the one they agree on.
        ObjectNode groups = pod.putObject("cache_group_hit_tokens");
        c.match().groupTokens().forEach((group, tokens) -> groups.put(group.toString(), tokens));
      }
      pod.put("load", c.load());
      pod.put("verdict", c.verdict().name().toLowerCase(Locale.ROOT));
      PodLiveness live = c.liveness();
      if (live == null) {
        pod.putNull("pod_record");
      } else {
        ObjectNode record = pod.putObject("pod_record");
        record.put("recorded", live.recorded());
        record.put("live", live.live());
        if (live.recorded()) {
          record.put("deadline_ms", live.deadlineMs());
          record.put("remaining_ms", live.deadlineMs() - live.nowMs());
        }
      }
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

  private static Response notAllowed(String allowed) {
    return Response.notAllowed(allowed);
  }
}
