package io.kvindex.event;

import java.util.Locale;

/**
 * Normalises vLLM's free-form {@code medium} strings. Thread-safe (stateless).
 *
 * <p>vLLM sends {@code GPU} (or nil) for its prefix cache, {@code CPU} for the offloading
 * connector's CPU tier and, for secondary tiers, {@code STORAGE} (PR #48123; before it, briefly,
 * {@code FS} and {@code OBJ}); connectors may send other strings (Mooncake: lower-case {@code
 * cpu}). Every value is kept as sent; the index files the secondary ones under its storage tier.
 */
public final class Tiers {
  /** The tier a nil medium means. */
  public static final String GPU = "GPU";

  /** The offloading connector's CPU tier. */
  public static final String CPU = "CPU";

  /** A secondary (storage) tier, local or shared: see {@link BlockStored#locality}. */
  public static final String STORAGE = "STORAGE";

  /** A file-system secondary tier, as vLLM named it before {@link #STORAGE}. */
  public static final String FS = "FS";

  /** An object-store secondary tier, as vLLM named it before {@link #STORAGE}. */
  public static final String OBJ = "OBJ";

  private Tiers() {}

  /** {@code null} means GPU; anything else is compared case-insensitively, so upper-cased. */
  public static String normalize(String medium) {
    return medium == null ? GPU : medium.toUpperCase(Locale.ROOT);
  }
}
