package io.kvindex.epp;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
   * The top-level fields the picker reads beside {@code prompt}: each kept as a small JSON tree,
   * every other field skipped unread.
   */
  private static final Set<String> READ_FIELDS = readFields();

  private static Set<String> readFields() {
    Set<String> fields =
        new HashSet<>(List.of("model", "cache_salt", "stream", "stream_options", "messages"));
    fields.addAll(CHAT_TOKENIZE_FIELDS);
    return Set.copyOf(fields);
  }

  /**
   * Reads a request body.
   *
   * <p>Implementation notes. One streaming pass (Jackson's parser) over the body: a completion's
   * token ids go straight into an {@code int[]}, never into a tree of one node per token (most of a
   * 4 096-token prompt's reading time, and most of the garbage a request made); the few other
   * fields read are kept as small trees, the rest skipped. What a prompt is found to be wrong with
   * is told only once the whole body has been read and its model found, so that the reasons come in
   * the order {@code unparseable}, {@code no_model}, {@code no_prompt}.
   *
   * @throws Unreadable with reason {@code unparseable} (not a JSON object), {@code no_model}, or
   *     {@code no_prompt} (no prompt the picker can tokenize: prompt embeddings, an empty prompt)
   */
  static InferenceCall parse(Api api, byte[] body, ObjectMapper json) throws Unreadable {
    ObjectNode root = json.createObjectNode();
    Prompt prompt = null;
    JsonParser p = null;
    try {
      p = json.getFactory().createParser(body);
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new Unreadable("unparseable", "the body is not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        if (api == Api.COMPLETIONS && name.equals("prompt")) {
          TokenIdArray ids = TokenIdArray.scan(p, body);
          if (ids == null) {
            prompt = Prompt.read(p, json);
          } else {
            prompt = new Prompt(ids.tokenIds, null, 1, null);
            p.close();
            p = ids.rest(json);
            if (p == null) {
              break; // the object ended with the prompt
            }
          }
        } else if (READ_FIELDS.contains(name)) {
          root.set(name, p.readValueAsTree());
        } else {
          p.skipChildren();
        }
      }
      if (p != null && p.currentToken() != JsonToken.END_OBJECT) {
        throw new Unreadable("unparseable", "the body is not a JSON object");
      }
    } catch (IOException e) {
      throw new Unreadable("unparseable", "the body is not JSON: " + e.getMessage());
    } finally {
      if (p != null) {
        try {
          p.close();
        } catch (IOException e) {
          // a parser over bytes holds nothing to release
        }
      }
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
        ? chat(root, name, salt, stream, usage, json)
        : completion(root, prompt, name, salt, stream, usage, json);
  }

  /**
   * A prompt of plain token ids read straight from the body's bytes: the common case of a 4
   * 096-token prompt, whose numbers Jackson's parser would tokenize one by one (most of the body's
   * reading time). Only the simplest form is taken (a flat array of non-negative decimal integers
   * that fit an {@code int}, with JSON's whitespace); anything else (a batch, a sign, a fraction,
   * an exponent, a leading zero, an empty array) is left to the parser, which reads and judges it
   * as before. The fields after the array are then read by a parser over the rest of the body.
   */
  private static final class TokenIdArray {
    final int[] tokenIds;
    private final byte[] body;
    private final int end;

    private TokenIdArray(int[] tokenIds, byte[] body, int end) {
      this.tokenIds = tokenIds;
      this.body = body;
      this.end = end;
    }

    /**
     * The token ids of the array the parser is at (its {@code START_ARRAY} just returned), or null
     * when they are not in the simplest form; the parser is then where it was.
     */
    static TokenIdArray scan(JsonParser p, byte[] body) {
      if (p.currentToken() != JsonToken.START_ARRAY) {
        return null;
      }
      long offset = p.currentLocation().getByteOffset();
      if (offset < 1 || offset > body.length || body[(int) offset - 1] != '[') {
        return null; // not where the parser's location says: leave it to the parser
      }
      int at = (int) offset;
      int[] ids = new int[Math.max(16, (body.length - at) / 4)];
      int n = 0;
      while (true) {
        at = skipSpace(body, at);
        if (at >= body.length) {
          return null;
        }
        int start = at;
        long value = 0;
        while (at < body.length && body[at] >= '0' && body[at] <= '9' && at - start < 11) {
          value = value * 10 + (body[at] - '0');
          at++;
        }
        int digits = at - start;
        if (digits == 0 || value > Integer.MAX_VALUE || (digits > 1 && body[start] == '0')) {
          return null;
        }
        if (n == ids.length) {
          ids = Arrays.copyOf(ids, n * 2);
        }
        ids[n++] = (int) value;
        at = skipSpace(body, at);
        if (at >= body.length) {
          return null;
        }
        if (body[at] == ']') {
          return new TokenIdArray(Arrays.copyOf(ids, n), body, at + 1);
        }
        if (body[at] != ',') {
          return null;
        }
        at++;
      }
    }

    /**
     * A parser over the body after the array, at the next field's name, or null when the body's
     * object ends there.
     *
     * @throws Unreadable when what follows is not the rest of a JSON object
     * @throws IOException when the parser cannot start
     */
    JsonParser rest(ObjectMapper json) throws IOException, Unreadable {
      int at = skipSpace(body, end);
      if (at < body.length && body[at] == '}') {
        return null;
      }
      int next = at < body.length && body[at] == ',' ? skipSpace(body, at + 1) : -1;
      if (next < 0 || next >= body.length || body[next] != '"') {
        throw new Unreadable(
            "unparseable", "the body is not JSON: no field or '}' after the prompt's token ids");
      }
      // The rest read as an object of its own: '{' and the fields after the comma.
      byte[] rest = new byte[body.length - at];
      rest[0] = '{';
      System.arraycopy(body, at + 1, rest, 1, rest.length - 1);
      JsonParser p = json.getFactory().createParser(rest);
      p.nextToken();
      return p;
    }

    private static int skipSpace(byte[] body, int at) {
      while (at < body.length
          && (body[at] == ' ' || body[at] == '\n' || body[at] == '\r' || body[at] == '\t')) {
        at++;
      }
      return at;
    }
  }

  /**
   * A completion's {@code prompt} as read in one pass: the first prompt (token ids, or text), how
   * many prompts there are, or what is wrong with it.
   */
  private record Prompt(int[] tokenIds, JsonNode text, int count, Unreadable wrong) {

    /** Reads the prompt's value, the parser at its first token; leaves it at its last. */
    static Prompt read(JsonParser p, ObjectMapper json) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_NULL) {
        return null;
      }
      if (t == JsonToken.VALUE_STRING) {
        return new Prompt(null, json.getNodeFactory().textNode(p.getText()), 1, null);
      }
      if (t != JsonToken.START_ARRAY) {
        p.skipChildren();
        return wrong("the prompt is neither text nor a list of token ids");
      }
      JsonToken first = p.nextToken();
      if (first == JsonToken.END_ARRAY) {
        return wrong("the prompt is an empty list");
      }
      if (first == JsonToken.VALUE_STRING) {
        JsonNode text = json.getNodeFactory().textNode(p.getText());
        return new Prompt(null, text, 1 + skipRest(p), null);
      }
      if (first == JsonToken.START_ARRAY) {
        Prompt ids = tokenIds(p, p.nextToken());
        return new Prompt(ids.tokenIds, null, 1 + skipRest(p), ids.wrong);
      }
      return tokenIds(p, first);
    }

    /**
     * Token ids up to the end of the current array, the parser at the first element's token {@code
     * t}.
     */
    private static Prompt tokenIds(JsonParser p, JsonToken t) throws IOException {
      int[] ids = new int[1024];
      int n = 0;
      for (; t != JsonToken.END_ARRAY; t = p.nextToken()) {
        if (t != JsonToken.VALUE_NUMBER_INT
            || p.getNumberType() != JsonParser.NumberType.INT
            || p.getIntValue() < 0) {
          String why = "prompt[" + n + "] is not a token id";
          p.skipChildren();
          skipRest(p);
          return wrong(why);
        }
        if (n == ids.length) {
          ids = Arrays.copyOf(ids, n * 2);
        }
        ids[n++] = p.getIntValue();
      }
      if (n == 0) {
        return wrong("the prompt is neither text nor a list of token ids");
      }
      return new Prompt(Arrays.copyOf(ids, n), null, 1, null);
    }

    /** Skips the current array's elements after the current one; returns how many there were. */
    private static int skipRest(JsonParser p) throws IOException {
      int n = 0;
      while (p.nextToken() != JsonToken.END_ARRAY) {
        p.skipChildren();
        n++;
      }
      return n;
    }

    private static Prompt wrong(String why) {
      return new Prompt(null, null, 1, new Unreadable("no_prompt", why));
    }
  }

  private static InferenceCall completion(
      ObjectNode root,
      Prompt prompt,
      String model,
      String salt,
      boolean stream,
      boolean usage,
      ObjectMapper json)
      throws Unreadable {
    if (prompt == null) {
      throw new Unreadable("no_prompt", "the completion has no prompt (prompt embeddings?)");
    }
    if (prompt.wrong() != null) {
      throw prompt.wrong();
    }
    if (prompt.text() != null) {
      ObjectNode tokenize = json.createObjectNode();
      tokenize.put("model", model);
      tokenize.set("prompt", prompt.text());
      JsonNode special = root.get("add_special_tokens");
      if (special != null && special.isBoolean()) {
        tokenize.set("add_special_tokens", special);
      }
      return new InferenceCall(model, null, tokenize, salt, prompt.count(), stream, usage);
    }
    return new InferenceCall(model, prompt.tokenIds(), null, salt, prompt.count(), stream, usage);
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
}
