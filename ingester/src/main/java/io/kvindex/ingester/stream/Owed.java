package io.kvindex.ingester.stream;

/**
 * What a stream still has to read from its engine's replay ring, as a state machine: nothing; the
 * ring's copy of its last applied batch, once its live socket reconnected; the rest of a history
 * that a replay stopped at its window; or both. Every transition is in {@link #on}. Immutable;
 * thread-safe.
 *
 * <p>A reconnect owes the check: maybe another process on the same endpoint, whose first batches
 * were never heard, so nothing more is applied before the ring is compared. The catch-up that
 * answers it settles it, and so does finding it impossible (no ring, nothing applied yet, a purge
 * pending). Each replay read decides whether history is owed: it is when the read stopped at its
 * window before the ring's end; the next catch-up or gap then fetches the rest, and the stream
 * keeps its replay slot meanwhile.
 */
enum Owed {
  /** Nothing to read from the ring before going on. */
  NOTHING(false, false),
  /** The live socket reconnected: the ring's copy of the last applied batch is still to see. */
  RECONNECT_CHECK(true, false),
  /** A replay stopped at its window: the rest of the history is still to be read. */
  HISTORY(false, true),
  /** Both the reconnect's check and the rest of a history. */
  RECONNECT_CHECK_AND_HISTORY(true, true);

  /** What happens to a stream's reads of its ring. */
  enum Event {
    /** The live socket reconnected. */
    RECONNECTED,
    /** The reconnect's check was made, or cannot be. */
    CHECKED,
    /** A replay stopped at its window, before the ring's end. */
    HISTORY_CUT,
    /** A replay was read to its end, or as far as its reader asked. */
    HISTORY_READ
  }

  private final boolean check;
  private final boolean history;

  Owed(boolean check, boolean history) {
    this.check = check;
    this.history = history;
  }

  /** The state after {@code event}. */
  Owed on(Event event) {
    return switch (event) {
      case RECONNECTED -> of(true, history);
      case CHECKED -> of(false, history);
      case HISTORY_CUT -> of(check, true);
      case HISTORY_READ -> of(check, false);
    };
  }

  /** Whether the ring must be compared with the last applied batch before more is applied. */
  boolean reconnectCheck() {
    return check;
  }

  /** Whether a replay stopped at its window left history to read (the slot is kept meanwhile). */
  boolean history() {
    return history;
  }

  private static Owed of(boolean check, boolean history) {
    return check
        ? (history ? RECONNECT_CHECK_AND_HISTORY : RECONNECT_CHECK)
        : (history ? HISTORY : NOTHING);
  }
}
