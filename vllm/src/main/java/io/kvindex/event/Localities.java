package io.kvindex.event;

/**
 * The {@code locality} values of vLLM's store events (PR #48281): whether a storage tier belongs to
 * the publishing engine or is shared with others. The field is kept as sent; a value this version
 * does not know is kept as text and counts as neither. Thread-safe (stateless).
 */
public final class Localities {
  /** The tier belongs to the publishing engine. */
  public static final String LOCAL = "LOCAL";

  /** The tier is shared with other engines (a remote store). */
  public static final String REMOTE = "REMOTE";

  private Localities() {}

  /** Whether {@code locality} is {@code REMOTE}, case ignored; {@code null} is not. */
  public static boolean isRemote(String locality) {
    return REMOTE.equalsIgnoreCase(locality);
  }
}
