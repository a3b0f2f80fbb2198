package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * The bounds of one request to the scoring service; each refusal says what was over which limit and
 * names the setting that raises it. Immutable and thread-safe.
 *
 * @param maxTokens token ids per request
 * @param maxBlockKeys block keys per request, and blocks one speculative route records
 * @param maxCandidates candidate pods per request
 * @param maxNameBytes UTF-8 bytes of a model, LoRA or pod name
 * @param maxRecordTtl the longest {@code record_ttl_ms}
 */
record Limits(
    int maxTokens, int maxBlockKeys, int maxCandidates, int maxNameBytes, Duration maxRecordTtl) {

  /** A request over a size limit; answered with status 413 (an IllegalArgumentException: 400). */
  static final class TooLargeException extends IllegalArgumentException {
    TooLargeException(String message) {
      super(message);
    }
  }

  /** {@code token_ids}, when it is an array, holds at most {@link #maxTokens} entries. */
  void tokens(JsonNode tokens, String field) {
    count(tokens, field, "token ids", maxTokens, RouterSetting.MAX_TOKENS);
  }

  /** {@code block_keys}, when it is an array, holds at most {@link #maxBlockKeys} entries. */
  void blockKeys(JsonNode keys, String field) {
    count(keys, field, "block keys", maxBlockKeys, RouterSetting.MAX_BLOCK_KEYS);
  }

  /** The candidate list, when it is an array, names at most {@link #maxCandidates} pods. */
  void candidates(JsonNode pods, String field) {
    count(pods, field, "pods", maxCandidates, RouterSetting.MAX_CANDIDATES);
  }

  /** {@code name} (a model, LoRA or pod name, or null) is at most {@link #maxNameBytes} long. */
  String name(String name, String field) {
    // A char is at most 3 UTF-8 bytes: only a long name is worth encoding.
    if (name != null
        && name.length() * 3L > maxNameBytes
        && name.getBytes(StandardCharsets.UTF_8).length > maxNameBytes) {
      throw new BadRequestException(
          "'"
              + field
              + "' is "
              + name.getBytes(StandardCharsets.UTF_8).length
              + " bytes long, over the limit of "
              + maxNameBytes
              + " bytes"
              + setBy(RouterSetting.MAX_NAME_BYTES));
    }
    return name;
  }

  /** The asked {@code record_ttl_ms} as a duration, at most {@link #maxRecordTtl}. */
  Duration recordTtl(int millis) {
    if (millis <= 0) {
      throw new BadRequestException("'record_ttl_ms' must be a positive number of milliseconds");
    }
    if (millis > maxRecordTtl.toMillis()) {
      throw new BadRequestException(
          "'record_ttl_ms' "
              + millis
              + " is over the limit of "
              + maxRecordTtl.toMillis()
              + " ms"
              + setBy(RouterSetting.MAX_RECORD_TTL));
    }
    return Duration.ofMillis(millis);
  }

  /** The prompt's first {@link #maxBlockKeys} keys: what one speculative route records. */
  long[] recorded(long[] blockKeys) {
    return blockKeys.length <= maxBlockKeys ? blockKeys : Arrays.copyOf(blockKeys, maxBlockKeys);
  }

  private static void count(
      JsonNode array, String field, String what, int max, RouterSetting setting) {
    int size = Json.size(array);
    if (size > max) {
      throw new TooLargeException(
          "'"
              + field
              + "' has "
              + size
              + " "
              + what
              + ", over the limit of "
              + max
              + setBy(setting));
    }
  }

  private static String setBy(RouterSetting setting) {
    return " set by " + setting.setting.describe();
  }
}
