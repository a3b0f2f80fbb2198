package io.kvindex.index;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/** Argument checks whose messages name the argument. */
final class Names {
  private Names() {}

  static String check(String value, String name) {
    Objects.requireNonNull(value, () -> name + " must not be null");
    if (value.isEmpty()) {
      throw new IllegalArgumentException(name + " must not be empty");
    }
    if (value.length() > StreamId.MAX_NAME_BYTES / 3
        && value.getBytes(StandardCharsets.UTF_8).length > StreamId.MAX_NAME_BYTES) {
      throw new IllegalArgumentException(
          name + " must be at most " + StreamId.MAX_NAME_BYTES + " UTF-8 bytes");
    }
    return value;
  }

  static <T> T notNull(T value, String name) {
    return Objects.requireNonNull(value, () -> name + " must not be null");
  }

  static int atLeast(int value, int min, String name) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
    }
    return value;
  }
}
