package io.kvindex.service;

import io.kvindex.common.Check;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/**
 * The one way every kvindex setting and command line writes a duration. Thread-safe (stateless).
 *
 * <p>Accepted: a number with a unit, {@code ns}, {@code us} (or {@code µs}), {@code ms}, {@code s},
 * {@code m}, {@code h} or {@code d}, the number possibly with a fraction ({@code 1.5s}); a bare
 * number of seconds ({@code 40}); or ISO-8601 ({@code PT6S}, {@code P1D}), in any case.
 */
public final class Durations {
  private static final String FORMS = "write for example 250ms, 6s, 1.5s, 2m, 1h, 40 or PT6S";

  private Durations() {}

  /**
   * Reads a duration.
   *
   * @throws IllegalArgumentException naming the accepted forms
   */
  public static Duration parse(String text) {
    String v = Check.notNull(text, "duration").trim().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("p")) {
        return Duration.parse(v.toUpperCase(Locale.ROOT));
      }
      int unitAt = v.length();
      while (unitAt > 0 && !Character.isDigit(v.charAt(unitAt - 1))) {
        unitAt--;
      }
      BigDecimal amount = new BigDecimal(v.substring(0, unitAt).trim());
      if (amount.signum() < 0) {
        throw new IllegalArgumentException("'" + text + "' is negative; " + FORMS);
      }
      return Duration.ofNanos(
          amount
              .multiply(BigDecimal.valueOf(nanosPer(v.substring(unitAt).trim(), text)))
              .longValueExact());
    } catch (NumberFormatException | DateTimeParseException | ArithmeticException e) {
      throw new IllegalArgumentException("'" + text + "' is not a duration; " + FORMS, e);
    }
  }

  private static long nanosPer(String unit, String text) {
    return switch (unit) {
      case "ns" -> 1L;
      case "us", "µs" -> 1_000L;
      case "ms" -> 1_000_000L;
      case "", "s" -> 1_000_000_000L;
      case "m" -> 60_000_000_000L;
      case "h" -> 3_600_000_000_000L;
      case "d" -> 86_400_000_000_000L;
      default ->
          throw new IllegalArgumentException(
              "'" + text + "' has an unknown unit '" + unit + "'; " + FORMS);
    };
  }

  /** The shortest exact form {@link #parse} reads back: {@code 5ms}, {@code 6s}, {@code 1h}. */
  public static String format(Duration d) {
    long nanos = Check.notNull(d, "duration").toNanos();
    String[] units = {"d", "h", "m", "s", "ms", "us", "ns"};
    long[] sizes = {
      86_400_000_000_000L,
      3_600_000_000_000L,
      60_000_000_000L,
      1_000_000_000L,
      1_000_000L,
      1_000L,
      1L
    };
    for (int i = 0; i < units.length; i++) {
      if (nanos != 0 && nanos % sizes[i] == 0) {
        return nanos / sizes[i] + units[i];
      }
    }
    return "0s";
  }
}
