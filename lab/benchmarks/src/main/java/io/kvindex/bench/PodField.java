package io.kvindex.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The llm-d layout's hash field: one pod entry as JSON, {@code
 * {"PodIdentifier":"<pod>","DeviceTier":"<tier>"}}. Decoding reads only the pod identifier: a field
 * this class wrote is read in place, without a JSON library (the layout's cost is measured, not a
 * slow decoder's); any other field goes through Jackson. Thread-safe (stateless).
 */
final class PodField {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] PREFIX = "{\"PodIdentifier\":\"".getBytes(StandardCharsets.UTF_8);

  private PodField() {}

  static byte[] encode(String pod, String tier) {
    Map<String, String> entry = new LinkedHashMap<>();
    entry.put("PodIdentifier", pod);
    entry.put("DeviceTier", tier);
    try {
      return JSON.writeValueAsBytes(entry);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode a pod entry", e);
    }
  }

  /** The pod identifier's UTF-8 bytes inside {@code field}, or null if it has none. */
  static ByteBuffer identifier(byte[] field) {
    int end = plainEnd(field);
    if (end >= 0) {
      return ByteBuffer.wrap(field, PREFIX.length, end - PREFIX.length).slice();
    }
    String pod = decoded(field);
    return pod == null ? null : ByteBuffer.wrap(pod.getBytes(StandardCharsets.UTF_8));
  }

  /** Whether the field's pod identifier is {@code identifier} (UTF-8). */
  static boolean identifierEquals(byte[] field, byte[] identifier) {
    ByteBuffer found = identifier(field);
    return found != null && found.equals(ByteBuffer.wrap(identifier));
  }

  /**
   * Where the identifier's closing quote is, for a field that starts as {@link #encode} writes it
   * and whose identifier has no escape; -1 otherwise.
   */
  private static int plainEnd(byte[] field) {
    if (field.length < PREFIX.length) {
      return -1;
    }
    for (int i = 0; i < PREFIX.length; i++) {
      if (field[i] != PREFIX[i]) {
        return -1;
      }
    }
    for (int i = PREFIX.length; i < field.length; i++) {
      if (field[i] == '\\') {
        return -1;
      }
      if (field[i] == '"') {
        return i;
      }
    }
    return -1;
  }

  private static String decoded(byte[] field) {
    try {
      JsonNode node = JSON.readTree(field);
      JsonNode pod = node == null ? null : node.get("PodIdentifier");
      return pod == null || !pod.isTextual() ? null : pod.asText();
    } catch (IOException e) {
      if (e instanceof JsonProcessingException) {
        return null;
      }
      throw new UncheckedIOException(e);
    }
  }
}
