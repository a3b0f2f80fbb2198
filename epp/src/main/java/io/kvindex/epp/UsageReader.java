package io.kvindex.epp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Reads vLLM's {@code usage} from a response body as it passes: a JSON body whole, or server-sent
 * events one at a time (the usage a stream reports comes in its last chunk, with {@code
 * stream_options.include_usage}). Keeps no more than one event, or one JSON body up to its limit.
 * Not thread-safe: one per response, fed in order.
 */
final class UsageReader {
  /** What the engine reported: {@code prompt_tokens}, and {@code cached_tokens} or -1. */
  record Usage(int promptTokens, int cachedTokens) {}

  private final boolean events;
  private final int maxBytes;
  private final ObjectMapper json;
  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private boolean overflowed;
  private Usage usage;

  /**
   * @param events whether the body is server-sent events
   * @param maxBytes the most bytes kept of a JSON body, or of one event
   */
  UsageReader(boolean events, int maxBytes, ObjectMapper json) {
    this.events = events;
    this.maxBytes = maxBytes;
    this.json = json;
  }

  /** Whether a body's first chunk looks like server-sent events (its type not told). */
  static boolean looksLikeEvents(ByteString chunk) {
    return chunk.size() >= 5 && chunk.substring(0, 5).toStringUtf8().equals("data:");
  }

  /** Takes the next chunk of the body. */
  void feed(byte[] chunk) {
    if (!events) {
      keep(chunk, 0, chunk.length);
      return;
    }
    int from = 0;
    for (int i = 0; i < chunk.length; i++) {
      if (chunk[i] == '\n') {
        keep(chunk, from, i - from);
        line();
        from = i + 1;
      }
    }
    keep(chunk, from, chunk.length - from);
  }

  /** The body has ended: the usage it reported, or null when it reported none. */
  Usage finish() {
    if (events) {
      line();
    } else if (!overflowed && pending.size() > 0) {
      read(pending.toByteArray());
    }
    return usage;
  }

  /** Whether a JSON body, or an event, was longer than the limit (its usage then unread). */
  boolean overflowed() {
    return overflowed;
  }

  private void keep(byte[] bytes, int from, int length) {
    if (overflowed && !events) {
      return;
    }
    if (pending.size() + length > maxBytes) {
      overflowed = true;
      pending.reset();
      return;
    }
    pending.write(bytes, from, length);
  }

  /** One complete line of an event stream: a {@code data:} line that mentions usage is read. */
  private void line() {
    byte[] line = pending.toByteArray();
    pending.reset();
    String text = new String(line, StandardCharsets.UTF_8).trim();
    if (text.startsWith("data:") && text.contains("\"usage\"")) {
      String data = text.substring("data:".length()).trim();
      if (!data.equals("[DONE]")) {
        read(data.getBytes(StandardCharsets.UTF_8));
      }
    }
  }

  private void read(byte[] body) {
    try {
      JsonNode u = json.readTree(body).path("usage");
      if (u.isObject() && u.path("prompt_tokens").canConvertToInt()) {
        JsonNode cached = u.path("prompt_tokens_details").path("cached_tokens");
        usage =
            new Usage(
                u.get("prompt_tokens").intValue(),
                cached.canConvertToInt() ? cached.intValue() : -1);
      }
    } catch (IOException e) {
      // not JSON (an error page, a cut chunk): no usage from it
    }
  }
}
