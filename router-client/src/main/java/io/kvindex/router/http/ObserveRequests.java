package io.kvindex.router.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
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
 * {@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens}. The answer is
 * {@code {"prediction_error_blocks": -1, "outcome": "under"}} (outcome {@code exact}, {@code over}
 * or {@code under}).
 */
final class ObserveRequests {
  private ObserveRequests() {}

  static Observation parse(ObjectNode body, Limits limits) {
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
    return new Observation(model, pod, predicted, prompt, cached);
  }

  static ObjectNode answer(int errorBlocks) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("prediction_error_blocks", errorBlocks);
    out.put("outcome", errorBlocks == 0 ? "exact" : errorBlocks > 0 ? "over" : "under");
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
