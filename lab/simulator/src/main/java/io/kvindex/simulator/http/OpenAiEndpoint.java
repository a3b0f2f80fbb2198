package io.kvindex.simulator.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.service.HttpService.Request;
import io.kvindex.service.HttpService.Response;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodUnavailableException;
import io.kvindex.simulator.RequestTooLargeException;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A simulated pod's OpenAI-compatible endpoint, as vLLM serves it: {@code POST /v1/completions} (a
 * prompt of token ids or text), {@code POST /v1/chat/completions}, and {@code POST /tokenize} of
 * either. Each request is served by the pod's engine, so its prefix cache and KV events are those
 * of the prompt; {@code usage} carries {@code prompt_tokens_details.cached_tokens} as vLLM reports
 * it with {@code --enable-prompt-tokens-details}, and a streamed response ends with a usage chunk
 * when {@code stream_options.include_usage} asks for one. A {@code model} other than the pod's is
 * served as a LoRA adapter of that name. Thread-safe.
 *
 * <p>Text is tokenized by {@link SimTokenizer}, a deterministic stand-in for a model's tokenizer
 * and chat template; what matters to a gateway is that {@code /tokenize} answers what serving the
 * same prompt uses.
 *
 * <p>Its requests are counted as vLLM's scheduler counts them on {@code /metrics}: waiting from
 * arrival until the engine takes them (its prefill and first token), running from then until the
 * response is made.
 */
final class OpenAiEndpoint {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int DEFAULT_MAX_TOKENS = 16;
  private static final int MOST_TOKENS = 256;

  private final SimulatedPod pod;
  private final AtomicLong ids = new AtomicLong();
  private final AtomicInteger waiting = new AtomicInteger();
  private final AtomicInteger running = new AtomicInteger();

  OpenAiEndpoint(SimulatedPod pod) {
    this.pod = pod;
  }

  /** Completion requests that have come and that the engine has not taken yet. */
  int waiting() {
    return waiting.get();
  }

  /** Completion requests the engine has taken whose response is not made yet. */
  int running() {
    return running.get();
  }

  /** The answer to one of this endpoint's routes, or null for another path. */
  Response handle(Request request) throws IOException {
    String route = request.method() + " " + request.path();
    return switch (route) {
      case "POST /v1/completions" -> counted(request, false);
      case "POST /v1/chat/completions" -> counted(request, true);
      case "POST /tokenize" -> tokenize(body(request));
      default -> null;
    };
  }

  /** Serves a completion, counted waiting until the engine takes it, then running. */
  private Response counted(Request request, boolean chat) throws IOException {
    boolean[] taken = {false};
    waiting.incrementAndGet();
    try {
      return serve(
          body(request),
          chat,
          () -> {
            taken[0] = true;
            waiting.decrementAndGet();
            running.incrementAndGet();
          });
    } finally {
      (taken[0] ? running : waiting).decrementAndGet();
    }
  }

  private static ObjectNode body(Request request) throws IOException {
    JsonNode root = JSON.readTree(request.body());
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("the body must be a JSON object");
    }
    return (ObjectNode) root;
  }

  private Response tokenize(ObjectNode body) {
    int[] tokens = body.has("messages") ? chatTokens(body) : promptTokens(body, body.get("prompt"));
    ObjectNode out = JSON.createObjectNode();
    out.put("count", tokens.length);
    out.put("max_model_len", 131072);
    ArrayNode list = out.putArray("tokens");
    for (int t : tokens) {
      list.add(t);
    }
    out.putNull("token_strs");
    return Response.json(200, out);
  }

  private Response serve(ObjectNode body, boolean chat, Runnable taken) {
    String model = text(body, "model");
    if (model == null) {
      return Response.error(400, "the request names no model");
    }
    int[] prompt = chat ? chatTokens(body) : promptTokens(body, firstPrompt(body));
    int maxTokens =
        Math.min(Math.max(body.path("max_tokens").asInt(DEFAULT_MAX_TOKENS), 1), MOST_TOKENS);
    int[] output = SimTokenizer.output(prompt, maxTokens);
    String lora = model.equals(pod.model()) ? null : model;
    Completion done;
    try {
      InferenceRequest request =
          new InferenceRequest(prompt, output, lora, text(body, "cache_salt"));
      done = pod.submit(request);
      taken.run();
    } catch (PodUnavailableException e) {
      return Response.error(503, "the engine is not serving: " + e.getMessage());
    } catch (RequestTooLargeException e) {
      return Response.error(400, e.getMessage());
    }
    ObjectNode usage = usage(done, output.length);
    String id = (chat ? "chatcmpl-" : "cmpl-") + pod.name() + "-" + ids.incrementAndGet();
    if (body.path("stream").asBoolean(false)) {
      boolean withUsage = body.path("stream_options").path("include_usage").asBoolean(false);
      return events(id, model, chat, output, withUsage ? usage : null);
    }
    ObjectNode out = head(id, model, chat ? "chat.completion" : "text_completion");
    ObjectNode choice = out.putArray("choices").addObject();
    choice.put("index", 0);
    if (chat) {
      ObjectNode message = choice.putObject("message");
      message.put("role", "assistant");
      message.put("content", SimTokenizer.text(output));
    } else {
      choice.put("text", SimTokenizer.text(output));
    }
    choice.putNull("logprobs");
    choice.put("finish_reason", "length");
    out.set("usage", usage);
    return Response.json(200, out);
  }

  /** Server-sent events: a chunk per generated token, a usage chunk if asked, then [DONE]. */
  private Response events(String id, String model, boolean chat, int[] output, ObjectNode usage) {
    String object = chat ? "chat.completion.chunk" : "text_completion";
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < output.length; i++) {
      ObjectNode chunk = head(id, model, object);
      ObjectNode choice = chunk.putArray("choices").addObject();
      choice.put("index", 0);
      String piece = SimTokenizer.text(new int[] {output[i]});
      if (chat) {
        ObjectNode delta = choice.putObject("delta");
        if (i == 0) {
          delta.put("role", "assistant");
        }
        delta.put("content", piece);
      } else {
        choice.put("text", piece);
      }
      choice.putNull("logprobs");
      if (i == output.length - 1) {
        choice.put("finish_reason", "length");
      } else {
        choice.putNull("finish_reason");
      }
      if (usage != null) {
        chunk.putNull("usage");
      }
      data(out, chunk);
    }
    if (usage != null) {
      ObjectNode last = head(id, model, object);
      last.putArray("choices");
      last.set("usage", usage);
      data(out, last);
    }
    out.append("data: [DONE]\n\n");
    return new Response(
        200, "text/event-stream; charset=utf-8", out.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static void data(StringBuilder out, ObjectNode chunk) {
    try {
      out.append("data: ").append(JSON.writeValueAsString(chunk)).append("\n\n");
    } catch (IOException e) {
      throw new IllegalStateException("a JSON tree could not be written", e);
    }
  }

  private static ObjectNode head(String id, String model, String object) {
    ObjectNode out = JSON.createObjectNode();
    out.put("id", id);
    out.put("object", object);
    out.put("created", System.currentTimeMillis() / 1000);
    out.put("model", model);
    return out;
  }

  /** vLLM's usage: prompt, completion and total tokens, and the prompt's cached tokens. */
  private static ObjectNode usage(Completion done, int completionTokens) {
    ObjectNode usage = JSON.createObjectNode();
    usage.put("prompt_tokens", done.promptTokens());
    usage.put("total_tokens", done.promptTokens() + completionTokens);
    usage.put("completion_tokens", completionTokens);
    usage.putObject("prompt_tokens_details").put("cached_tokens", done.cachedTokens());
    return usage;
  }

  private static JsonNode firstPrompt(ObjectNode body) {
    JsonNode prompt = body.get("prompt");
    if (prompt != null && prompt.isArray() && !prompt.isEmpty()) {
      JsonNode first = prompt.get(0);
      if (first.isArray() || first.isTextual()) {
        return first;
      }
    }
    return prompt;
  }

  private static int[] promptTokens(ObjectNode body, JsonNode prompt) {
    if (prompt == null || prompt.isNull()) {
      throw new IllegalArgumentException("the request has no prompt");
    }
    if (prompt.isTextual()) {
      return SimTokenizer.prompt(prompt.asText(), body.path("add_special_tokens").asBoolean(true));
    }
    if (!prompt.isArray() || prompt.isEmpty()) {
      throw new IllegalArgumentException("the prompt must be text or a list of token ids");
    }
    int[] ids = new int[prompt.size()];
    for (int i = 0; i < ids.length; i++) {
      if (!prompt.get(i).canConvertToInt()) {
        throw new IllegalArgumentException("prompt[" + i + "] is not a token id");
      }
      ids[i] = prompt.get(i).intValue();
    }
    return ids;
  }

  private static int[] chatTokens(ObjectNode body) {
    JsonNode messages = body.get("messages");
    if (messages == null || !messages.isArray() || messages.isEmpty()) {
      throw new IllegalArgumentException("the request has no messages");
    }
    List<String[]> turns = new ArrayList<>();
    for (JsonNode m : messages) {
      turns.add(new String[] {m.path("role").asText("user"), content(m.get("content"))});
    }
    return SimTokenizer.chat(
        turns,
        body.path("add_generation_prompt").asBoolean(true),
        body.path("add_special_tokens").asBoolean(false));
  }

  /** A message's content: its text, or the text parts of a list of parts. */
  private static String content(JsonNode content) {
    if (content == null || content.isNull()) {
      return "";
    }
    if (content.isTextual()) {
      return content.asText();
    }
    StringBuilder out = new StringBuilder();
    for (JsonNode part : content) {
      if (part.path("type").asText().equals("text")) {
        out.append(part.path("text").asText()).append(' ');
      }
    }
    return out.toString();
  }

  private static String text(JsonNode body, String field) {
    JsonNode v = body.get(field);
    return v != null && v.isTextual() ? v.asText() : null;
  }
}
