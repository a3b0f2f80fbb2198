package io.kvindex.common;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;

/**
 * The argument checks of every kvindex module: each returns its argument and throws with a message
 * that names it ({@link NullPointerException} for a null, {@link IllegalArgumentException} for a
 * value out of range). Thread-safe (stateless).
 */
public final class Check {
  /** The longest model, pod, LoRA or owner name accepted, in UTF-8 bytes. */
  public static final int MAX_NAME_BYTES = 1 << 16;

  private Check() {}

  /** {@code value}, or a {@link NullPointerException} saying {@code name} must not be null. */
  public static <T> T notNull(T value, String name) {
    return Objects.requireNonNull(value, () -> name + " must not be null");
  }

  /** A string that is neither null nor blank. */
  public static String notBlank(String value, String name) {
    notNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
    return value;
  }

  /**
   * An external name (model, pod, LoRA, owner): not empty and at most {@value #MAX_NAME_BYTES}
   * UTF-8 bytes. Any characters are allowed: names never appear raw in Redis key names.
   */
  public static String name(String value, String name) {
    notNull(value, name);
    if (value.isEmpty()) {
      throw new IllegalArgumentException(name + " must not be empty");
    }
    if (value.length() > MAX_NAME_BYTES / 3
        && value.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
      throw new IllegalArgumentException(
          name + " must be at most " + MAX_NAME_BYTES + " UTF-8 bytes");
    }
    return value;
  }

  /** A duration above zero. */
  public static Duration positive(Duration value, String name) {
    notNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + value);
    }
    return value;
  }

  /** A duration of at least one millisecond (Redis counts in ms). */
  public static Duration atLeastOneMilli(Duration value, String name) {
    notNull(value, name);
    if (value.toMillis() < 1) {
      throw new IllegalArgumentException(name + " must be at least 1 ms, got " + value);
    }
    return value;
  }

  /** An integer at least {@code min}. */
  public static int atLeast(int value, int min, String name) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
    }
    return value;
  }

  /** A long at least {@code min}. */
  public static long atLeast(long value, long min, String name) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
    }
    return value;
  }

  /** A number at least {@code min} (NaN is refused). */
  public static double atLeast(double value, double min, String name) {
    if (!(value >= min)) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + value);
    }
    return value;
  }

  /** An integer in {@code [min, max]}. */
  public static int between(int value, int min, int max, String name) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          name + " must be in [" + min + ", " + max + "], got " + value);
    }
    return value;
  }

  /** A number in {@code [min, max]} (NaN is refused). */
  public static double between(double value, double min, double max, String name) {
    if (!(value >= min && value <= max)) {
      throw new IllegalArgumentException(
          name + " must be in [" + min + ", " + max + "], got " + value);
    }
    return value;
  }
}
