package io.kvindex.redis;

import java.time.Duration;
import java.util.Objects;

/** Argument checks whose messages name the argument. */
final class Args {

  private Args() {}

  static <T> T notNull(T value, String name) {
    return Objects.requireNonNull(value, () -> name + " must not be null");
  }

  static Duration positive(Duration value, String name) {
    notNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + value);
    }
    return value;
  }

  static Duration atLeastOneMilli(Duration value, String name) {
    notNull(value, name);
    if (value.toMillis() < 1) {
      throw new IllegalArgumentException(name + " must be at least 1 ms, got " + value);
    }
    return value;
  }

  static int atLeast(int value, int min, String name) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
    }
    return value;
  }

  static double between(double value, double min, double max, String name) {
    if (!(value >= min && value <= max)) {
      throw new IllegalArgumentException(
          name + " must be between " + min + " and " + max + ", got " + value);
    }
    return value;
  }

  static String notBlank(String value, String name) {
    notNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
    return value;
  }
}
