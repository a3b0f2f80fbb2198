package io.kvindex.epp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.List;

/**
 * What the picker reads from an OpenAI request body ({@code POST /v1/completions} or {@code POST
 * /v1/chat/completions}, as vLLM serves them): the model, the prompt (token ids, or what vLLM's
 * {@code POST /tokenize} takes to tokenize it exactly as the engine will), the cache salt, and
 * whether the response streams its usage. Immutable by convention (arrays and JSON trees are not
 * copied; nobody changes them), so thread-safe.
 *
 * @param model the request's {@code model}: the served model name, or a LoRA adapter's name
 * @param tokenIds the (first) prompt as token ids, or null when it is text or chat
 * @param tokenize the body of the {@code POST /tokenize} that tokenizes the (first) prompt as the
 *     engine will, or null when {@code tokenIds} is given
 * @param cacheSalt vLLM's {@code cache_salt}, or null
 * @param prompts how many prompts the request carries (a completions batch: more than 1)
 * @param stream whether the response is server-sent events
 * @param streamUsage whether a streamed response ends with a usage chunk ({@code
 *     stream_options.include_usage})
 */
record InferenceCall(
    String model,
    int[] tokenIds,
    ObjectNode tokenize,
    String cacheSalt,
    int prompts,
    boolean stream,
    boolean streamUsage) {

  /** The two OpenAI paths the picker reads. */
  enum Api {
    COMPLETIONS("/v1/completions"),
    CHAT("/v1/chat/completions");

    final String path;

    Api(String path) {
      this.path = path;
    }

    /** The API of a request path ({@code :path}, its query ignored), or null for another. */
    static Api of(String path) {
      if (path == null) {
        return null;
      }
      int q = path.indexOf('?');
      String p = q < 0 ? path : path.substring(0, q);
      for (Api a : values()) {
        if (a.path.equals(p)) {
          return a;
        }
      }
      return null;
    }
  }

  /** A body the picker cannot score from, with the reason it is counted under. */
  static final class Unreadable extends Exception {
    final String reason;

    Unreadable(String reason, String message) {
      super(message, null, false, false);
      this.reason = reason;
    }
  }

  /** The chat fields vLLM's {@code /tokenize} takes beside {@code messages}. */
  private static final List<String> CHAT_TOKENIZE_FIELDS =
      List.of(
          "add_generation_prompt",
          "continue_final_message",
          "add_special_tokens",
          "chat_template",
          "chat_template_kwargs",
          "tools",
          "documents",
          "mm_processor_kwargs");

  /**
   * Reads a request body.
   *
   * @throws Unreadable with reason {@code unparseable} (not a JSON object), {@code no_model}, or
   *     {@code no_prompt} (no prompt the picker can tokenize: prompt embeddings, an empty prompt)
   */
  static InferenceCall parse(Api api, byte[] body, ObjectMapper json) throws Unreadable {
    JsonNode root;
    try {
      root = json.readTree(body);
    } catch (IOException e) {
      throw new Unreadable("unparseable", "the body is not JSON: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw new Unreadable("unparseable", "the body is not a JSON object");
    }
    JsonNode model = root.get("model");
    if (model == null || !model.isTextual() || model.asText().isBlank()) {
      throw new Unreadable("no_model", "the body names no model");
    }
    String salt = root.path("cache_salt").isTextual() ? root.get("cache_salt").asText() : null;
    boolean stream = root.path("stream").asBoolean(false);
    boolean usage = stream && root.path("stream_options").path("include_usage").asBoolean(false);
    String name = model.asText();
    return api == Api.CHAT
        ? chat((ObjectNode) root, name, salt, stream, usage, json)
        : completion(root, name, salt, stream, usage, json);
  }

  private static InferenceCall completion(
      JsonNode root, String model, String salt, boolean stream, boolean usage, ObjectMapper json)
      throws Unreadable {
    JsonNode prompt = root.get("prompt");
    if (prompt == null || prompt.isNull()) {
      throw new Unreadable("no_prompt", "the completion has no prompt (prompt embeddings?)");
    }
    int prompts = 1;
    JsonNode first = prompt;
    if (prompt.isArray()) {
      if (prompt.isEmpty()) {
        throw new Unreadable("no_prompt", "the prompt is an empty list");
      }
      if (prompt.get(0).isArray() || prompt.get(0).isTextual()) {
        prompts = prompt.size();
        first = prompt.get(0);
      }
    }
    if (first.isTextual()) {
      ObjectNode tokenize = json.createObjectNode();
      tokenize.put("model", model);
      tokenize.set("prompt", first);
      JsonNode special = root.get("add_special_tokens");
      if (special != null && special.isBoolean()) {
        tokenize.set("add_special_tokens", special);
      }
      return new InferenceCall(model, null, tokenize, salt, prompts, stream, usage);
    }
    return new InferenceCall(model, tokenIds(first), null, salt, prompts, stream, usage);
  }

  private static InferenceCall chat(
      ObjectNode root, String model, String salt, boolean stream, boolean usage, ObjectMapper json)
      throws Unreadable {
    JsonNode messages = root.get("messages");
    if (messages == null || !messages.isArray() || messages.isEmpty()) {
      throw new Unreadable("no_prompt", "the chat completion has no messages");
    }
    ObjectNode tokenize = json.createObjectNode();
    tokenize.put("model", model);
    tokenize.set("messages", messages);
    for (String field : CHAT_TOKENIZE_FIELDS) {
      JsonNode v = root.get(field);
      if (v != null && !v.isNull()) {
        tokenize.set(field, v);
      }
    }
    return new InferenceCall(model, null, tokenize, salt, 1, stream, usage);
  }

  private static int[] tokenIds(JsonNode prompt) throws Unreadable {
    if (!prompt.isArray() || prompt.isEmpty()) {
      throw new Unreadable("no_prompt", "the prompt is neither text nor a list of token ids");
    }
    ArrayNode array = (ArrayNode) prompt;
    int[] ids = new int[array.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode t = array.get(i);
      if (!t.canConvertToInt() || !t.isIntegralNumber() || t.intValue() < 0) {
        throw new Unreadable("no_prompt", "prompt[" + i + "] is not a token id");
      }
      ids[i] = t.intValue();
    }
    return ids;
  }
}
