package io.kvindex.ingester;

import java.time.Duration;
import java.util.Objects;

/** Argument checks whose messages name the argument. Thread-safe (stateless). */
final class Checks {
  private Checks() {}

  static Duration positive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
    return d;
  }

  static int atLeast(int value, int min, String name) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be >= " + min + ", got " + value);
    }
    return value;
  }

  static String notBlank(String s, String name) {
    Objects.requireNonNull(s, name);
    if (s.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
    return s;
  }
}
