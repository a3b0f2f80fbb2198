package io.kvindex.inspect;

import io.lettuce.core.KeyValue;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * How the inspector reads the index's stored bytes: length-prefixed names, decimal numbers, hash
 * fields as text. Pure; thread-safe.
 */
final class StoredText {
  private StoredText() {}

  /** {@code u32 length | UTF-8} at {@code at}. */
  static String lengthPrefixed(byte[] bytes, int at) {
    int n = ByteBuffer.wrap(bytes, at, 4).getInt();
    return new String(bytes, at + 4, n, StandardCharsets.UTF_8);
  }

  /** A pod field's model and pod. */
  static String[] names(byte[] podField) {
    String model = lengthPrefixed(podField, 0);
    int at = 4 + model.getBytes(StandardCharsets.UTF_8).length;
    return new String[] {model, lengthPrefixed(podField, at)};
  }

  /** A hash's fields keyed by their bytes read as ISO-8859-1 (one char per byte, lossless). */
  static Map<String, byte[]> text(Map<byte[], byte[]> hash) {
    Map<String, byte[]> out = new HashMap<>();
    hash.forEach((k, v) -> out.put(latin1(k), v));
    return out;
  }

  static String latin1(byte[] bytes) {
    return new String(bytes, StandardCharsets.ISO_8859_1);
  }

  static byte[] latin1Bytes(String text) {
    return text.getBytes(StandardCharsets.ISO_8859_1);
  }

  static String ascii(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.US_ASCII);
  }

  static String utf8(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  static long decimal(byte[] value) {
    return value == null ? 0 : Long.parseLong(ascii(value));
  }

  static Long number(byte[] value) {
    return value == null ? null : Long.valueOf(ascii(value));
  }

  static byte[] value(KeyValue<byte[], byte[]> kv) {
    return kv.hasValue() ? kv.getValue() : null;
  }

  static byte[] bytes(ByteBuffer buffer) {
    byte[] out = new byte[buffer.remaining()];
    buffer.duplicate().get(out);
    return out;
  }
}
