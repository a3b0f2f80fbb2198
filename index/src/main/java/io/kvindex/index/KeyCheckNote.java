package io.kvindex.index;

import io.kvindex.common.Check;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;

/**
 * What the ingesters' key check last found for one model, as kept in the index: whether the block
 * hashes the engines publish are those the routers compute with the keys they noted, and which form
 * reproduces them. Read by {@code kvindex inspect}, and by routers that adopt the engines' keys.
 * Immutable, so thread-safe.
 *
 * @param verdict the finding
 * @param engines the keys that reproduce the engines' published hashes ({@link KeySpec#spec()}
 *     form), or {@code null} when no known form does
 * @param configured the keys routers noted for the model, or {@code null} when none did
 * @param matches sampled stores whose hashes the configured keys reproduced, since this ingester
 *     started
 * @param mismatches sampled stores whose hashes they did not reproduce
 * @param detail one sentence for users: what differs and what to do; empty when nothing does
 * @param atMillis when it was noted (the noting ingester's wall clock)
 */
public record KeyCheckNote(
    Verdict verdict,
    String engines,
    String configured,
    long matches,
    long mismatches,
    String detail,
    long atMillis) {

  /** The check's finding for a model. */
  public enum Verdict {
    /** The configured keys reproduce the engines' hashes. */
    MATCH,
    /** Most recent sampled stores' hashes differ from those the configured keys give. */
    MISMATCH,
    /** No router noted keys for the model; {@code engines} says what they would need. */
    UNCONFIGURED;

    /** The lower-case name, as shown. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public KeyCheckNote {
    Check.notNull(verdict, "verdict");
    detail = detail == null ? "" : detail;
    if (detail.indexOf('\n') >= 0
        || (engines != null && engines.indexOf('\n') >= 0)
        || (configured != null && configured.indexOf('\n') >= 0)) {
      throw new IllegalArgumentException("a key check note holds no line breaks");
    }
  }

  /** The keys that reproduce the engines' hashes, parsed, if a known form does. */
  public Optional<KeySpec> engineKeys() {
    return engines == null ? Optional.empty() : Optional.of(KeySpec.parse(engines));
  }

  /** The stored form: one field per line. */
  public byte[] encode() {
    return String.join(
            "\n",
            verdict.label(),
            engines == null ? "" : engines,
            configured == null ? "" : configured,
            Long.toString(matches),
            Long.toString(mismatches),
            Long.toString(atMillis),
            detail)
        .getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The note {@link #encode()} stored.
   *
   * @throws IllegalArgumentException if {@code stored} is not such a note
   */
  public static KeyCheckNote decode(byte[] stored) {
    String[] lines = new String(stored, StandardCharsets.UTF_8).split("\n", -1);
    if (lines.length != 7) {
      throw new IllegalArgumentException("a key check note has 7 lines, this one " + lines.length);
    }
    try {
      return new KeyCheckNote(
          Verdict.valueOf(lines[0].toUpperCase(Locale.ROOT)),
          lines[1].isEmpty() ? null : lines[1],
          lines[2].isEmpty() ? null : lines[2],
          Long.parseLong(lines[3]),
          Long.parseLong(lines[4]),
          lines[6],
          Long.parseLong(lines[5]));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("a key check note's counts are not numbers", e);
    }
  }
}
