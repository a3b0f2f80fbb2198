package io.kvindex.service;

import io.kvindex.common.Check;
import java.util.Locale;
import java.util.Map;

/**
 * The one way every kvindex setting writes a size in bytes. Thread-safe (stateless).
 *
 * <p>Accepted: a whole number of bytes ({@code 1048576}), or one with a unit: {@code B}, {@code
 * KiB}, {@code MiB}, {@code GiB} (powers of 1024), or {@code KB}, {@code MB}, {@code GB} (powers of
 * 1000), in any case.
 */
public final class ByteSizes {
  private static final String FORMS = "write for example 65536, 512KiB, 64MiB or 1GiB";
  private static final Map<String, Long> UNITS =
      Map.of(
          "", 1L,
          "b", 1L,
          "kib", 1L << 10,
          "mib", 1L << 20,
          "gib", 1L << 30,
          "kb", 1_000L,
          "mb", 1_000_000L,
          "gb", 1_000_000_000L);

  private ByteSizes() {}

  /**
   * Reads a size.
   *
   * @throws IllegalArgumentException naming the accepted forms
   */
  public static long parse(String text) {
    String v = Check.notNull(text, "size").trim().toLowerCase(Locale.ROOT);
    int unitAt = 0;
    while (unitAt < v.length() && Character.isDigit(v.charAt(unitAt))) {
      unitAt++;
    }
    Long unit = UNITS.get(v.substring(unitAt).trim());
    if (unitAt == 0 || unit == null) {
      throw new IllegalArgumentException("'" + text + "' is not a size; " + FORMS);
    }
    try {
      return Math.multiplyExact(Long.parseLong(v.substring(0, unitAt)), unit);
    } catch (ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' is too large; " + FORMS, e);
    }
  }
}
