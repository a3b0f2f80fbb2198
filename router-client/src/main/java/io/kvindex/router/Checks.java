package io.kvindex.router;

import java.util.Objects;

/** Argument checks whose messages name the argument. Thread-safe (stateless). */
final class Checks {
  private Checks() {}

  static int nonNegative(int value, String name) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, got " + value);
    }
    return value;
  }

  static int positive(int value, String name) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be > 0, got " + value);
    }
    return value;
  }

  static String nonBlank(String value, String name) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
    return value;
  }

  static double atLeast(double value, double min, String name) {
    if (!(value >= min)) {
      throw new IllegalArgumentException(name + " must be >= " + min + ", got " + value);
    }
    return value;
  }
}
