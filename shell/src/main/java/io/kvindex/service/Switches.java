package io.kvindex.service;

import io.kvindex.common.Check;
import java.util.Locale;

/**
 * How a service setting that is on or off reads (the ingester's {@code --infer-evictions}).
 * Thread-safe (stateless).
 *
 * <p>Accepted, in any case: {@code true}, {@code on}, {@code yes}, {@code 1} and {@code false},
 * {@code off}, {@code no}, {@code 0}.
 */
public final class Switches {
  private Switches() {}

  /**
   * Reads a switch.
   *
   * @throws IllegalArgumentException naming the accepted forms
   */
  public static boolean parse(String text) {
    String v = Check.notNull(text, "switch").trim().toLowerCase(Locale.ROOT);
    return switch (v) {
      case "true", "on", "yes", "1" -> true;
      case "false", "off", "no", "0" -> false;
      default ->
          throw new IllegalArgumentException(
              "'" + text + "' is not on or off: write true or false (also on/off, yes/no, 1/0)");
    };
  }
}
