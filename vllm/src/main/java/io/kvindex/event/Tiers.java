package io.kvindex.event;

import java.util.Locale;

/** Normalises vLLM's free-form {@code medium} strings. Thread-safe (stateless). */
public final class Tiers {
  /** The tier a nil medium means. */
  public static final String GPU = "GPU";

  private Tiers() {}

  /** {@code null} means GPU; anything else is compared case-insensitively, so upper-cased. */
  public static String normalize(String medium) {
    return medium == null ? GPU : medium.toUpperCase(Locale.ROOT);
  }
}
