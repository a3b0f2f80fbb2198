package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.router.KvRouter;
import io.kvindex.router.Observation;

/**
 * The body of {@code POST /observe}: what the engine reported for one routed request, beside what
 * the index predicted for its pod. Thread-safe (stateless).
 *
 * <pre>{@code
 * {"model": "Qwen/Qwen3-8B", "pod": "pod-3", "predicted_blocks": 12,
 *  "prompt_tokens": 200, "cached_tokens": 176}
 * }</pre>
 *
 * {@code predicted_blocks} is the {@code pick.matched_blocks} (or the pod's {@code matched_blocks})
 * of the request's {@code /score}; {@code prompt_tokens} and {@code cached_tokens} are vLLM's
 * {@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens}. Optional: the
 * prompt as {@code /score} took it ({@code token_ids} with {@code lora_name} and {@code
 * cache_salt}, or {@code block_keys}), which the router hashes only for a pod whose evictions the
 * index infers, and {@code rank}, the data-parallel rank the request went to, if the gateway knows
 * it. The answer is {@code {"prediction_error_blocks": -1, "outcome": "under", "blocks_wanted":
 * false}} (outcome {@code exact}, {@code over} or {@code under}; {@code blocks_wanted}: whether the
 * pod's next observations should carry the prompt).
 */
final class ObserveRequests {
  private ObserveRequests() {}

  /**
   * An observation as the body gives it, and whether the pod's observations should carry the prompt
   * (the index infers its evictions), as the router said once for this request.
   */
  record Parsed(Observation observation, boolean blocksWanted) {}

  /**
   * The observation, with the prompt's block keys when the pod needs them and the body has them.
   */
  static Parsed parse(ObjectNode body, Limits limits, KvRouter router) {
    String model = limits.name(Json.requiredText(body, "model", "model_name"), "model");
    String pod = limits.name(Json.requiredText(body, "pod", "instance_id"), "pod");
    int predicted = required(body, "predicted_blocks");
    int prompt = required(body, "prompt_tokens");
    int cached = required(body, "cached_tokens");
    if (predicted < 0 || prompt < 1 || cached < 0 || cached > prompt) {
      throw new BadRequestException(
          "need predicted_blocks >= 0, prompt_tokens >= 1 and 0 <= cached_tokens <= prompt_tokens,"
              + " got "
              + predicted
              + ", "
              + prompt
              + " and "
              + cached);
    }
    Integer rank = Json.integer(body, "rank");
    if (rank != null && rank < 0) {
      throw new BadRequestException("'rank' must be >= 0, got " + rank);
    }
    JsonNode tokens = Json.field(body, "token_ids", "tokens");
    JsonNode keys = Json.field(body, "block_keys");
    if (tokens != null && keys != null) {
      throw new BadRequestException("give at most one of 'token_ids' and 'block_keys'");
    }
    limits.tokens(tokens, "token_ids");
    limits.blockKeys(keys, "block_keys");
    String lora = limits.name(Json.text(body, "lora_name", "lora"), "lora_name");
    boolean wanted = router.needsBlockKeys(model, pod);
    long[] blockKeys = null;
    if (wanted && keys != null) {
      blockKeys = Json.blockKeys(keys, "block_keys");
    } else if (wanted && tokens != null) {
      blockKeys =
          router.blockKeys(
              model, lora, Json.text(body, "cache_salt"), Json.tokenIds(tokens, "token_ids"));
    }
    Observation o =
        new Observation(
            model,
            pod,
            predicted,
            prompt,
            cached,
            blockKeys,
            rank == null ? -1 : rank,
            Json.flag(body, "speculative"));
    return new Parsed(o, wanted);
  }

  /**
   * The answer: the error, and whether the pod's observations should carry the prompt from now on
   * (the index infers its evictions).
   */
  static ObjectNode answer(int errorBlocks, boolean blocksWanted) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("prediction_error_blocks", errorBlocks);
    out.put("outcome", errorBlocks == 0 ? "exact" : errorBlocks > 0 ? "over" : "under");
    out.put("blocks_wanted", blocksWanted);
    return out;
  }

  private static int required(ObjectNode body, String name) {
    Integer value = Json.integer(body, name);
    if (value == null) {
      throw new BadRequestException("'" + name + "' is required (an integer)");
    }
    return value;
  }
}
