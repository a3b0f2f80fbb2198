package io.kvindex.index.redis;

import java.nio.charset.StandardCharsets;

/** The encodings script arguments and replies use. Thread-safe (stateless). */
final class Bytes {
  private Bytes() {}

  /** A number as decimal ASCII, as Lua's {@code tonumber} reads it. */
  static byte[] ascii(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  static byte[] ascii(String value) {
    return value.getBytes(StandardCharsets.US_ASCII);
  }

  /** A bulk reply as text. */
  static String text(Object bytes) {
    return new String((byte[]) bytes, StandardCharsets.UTF_8);
  }

  /** A bulk value as text, or "" for none. */
  static String textOrEmpty(byte[] value) {
    return value == null ? "" : new String(value, StandardCharsets.UTF_8);
  }

  /** A decimal bulk reply (or null for 0), as the counters in a blocks hash hold them. */
  static long decimal(byte[] value) {
    return value == null ? 0 : Long.parseLong(new String(value, StandardCharsets.US_ASCII));
  }

  /** An integer reply, which a script may also send as a bulk string. */
  static long number(Object value) {
    if (value instanceof Long l) {
      return l;
    }
    return Long.parseLong(new String((byte[]) value, StandardCharsets.US_ASCII));
  }

  /** The liveness deadline at the head of a pod record (see {@link PodRecord}). */
  static long deadline(byte[] record) {
    return PodRecord.deadline(record);
  }

  /** 8 bytes big-endian at {@code at}. */
  static long longAt(byte[] bytes, int at) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (bytes[at + i] & 0xff);
    }
    return v;
  }
}
