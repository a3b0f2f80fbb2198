package io.kvindex.ingester.stream;

/**
 * What a stream still has to read from its engine's replay ring, as a state machine: nothing; the
 * ring's copy of its last applied batch, once its live socket reconnected (now, or when the next
 * live batch is heard); the rest of a history that a replay stopped at its window; or a check and
 * history both. Every transition is in {@link #on}. Immutable; thread-safe.
 *
 * <p>A reconnect owes the check: maybe another process on the same endpoint, whose first batches
 * were never heard, so nothing more is applied before the ring is compared. A check that compared a
 * copy of an applied batch settles it, and so does finding it impossible (no ring, nothing applied
 * yet, a purge pending). One that could not compare (the ring held no copy of a batch the stream
 * remembers: a new process that has not published as far yet, or a ring that did not answer) is
 * made again before the next live batch is applied, when the ring holds everything published before
 * that batch, and then settles whatever it finds. Each replay read decides whether history is owed:
 * it is when the read stopped at its window before the ring's end; the next catch-up or gap then
 * fetches the rest, and the stream keeps its replay slot meanwhile.
 */
enum Owed {
  /** Nothing to read from the ring before going on. */
  NOTHING(Check.NONE, false),
  /** The live socket reconnected: the ring's copy of the last applied batch is still to see. */
  RECONNECT_CHECK(Check.NOW, false),
  /** The reconnect's check could not compare: it is made again before the next live batch. */
  RECONNECT_CHECK_AT_LIVE(Check.AT_NEXT_LIVE, false),
  /** A replay stopped at its window: the rest of the history is still to be read. */
  HISTORY(Check.NONE, true),
  /** Both the reconnect's check and the rest of a history. */
  RECONNECT_CHECK_AND_HISTORY(Check.NOW, true),
  /** Both the reconnect's check at the next live batch and the rest of a history. */
  RECONNECT_CHECK_AT_LIVE_AND_HISTORY(Check.AT_NEXT_LIVE, true);

  /** What happens to a stream's reads of its ring. */
  enum Event {
    /** The live socket reconnected. */
    RECONNECTED,
    /** The reconnect's check compared a copy of an applied batch, or cannot be made. */
    CHECKED,
    /** The reconnect's check found no copy to compare: made again before the next live batch. */
    INCONCLUSIVE,
    /** A replay stopped at its window, before the ring's end. */
    HISTORY_CUT,
    /** A replay was read to its end, or as far as its reader asked. */
    HISTORY_READ
  }

  /** When the reconnect's check is owed. */
  private enum Check {
    NONE,
    NOW,
    AT_NEXT_LIVE
  }

  private static final Owed[] ALL = values();

  private final Check check;
  private final boolean history;

  Owed(Check check, boolean history) {
    this.check = check;
    this.history = history;
  }

  /** The state after {@code event}. */
  Owed on(Event event) {
    return switch (event) {
      case RECONNECTED -> of(Check.NOW, history);
      case CHECKED -> of(Check.NONE, history);
      case INCONCLUSIVE -> of(check == Check.NONE ? Check.NONE : Check.AT_NEXT_LIVE, history);
      case HISTORY_CUT -> of(check, true);
      case HISTORY_READ -> of(check, false);
    };
  }

  /** Whether the ring must be compared with the last applied batch before more is applied. */
  boolean reconnectCheck() {
    return check == Check.NOW;
  }

  /** Whether the ring must be compared with the last applied batch before a live batch is. */
  boolean reconnectCheckBeforeLive() {
    return check != Check.NONE;
  }

  /** Whether this is the check made again at a live batch, which settles whatever it finds. */
  boolean reconnectCheckRetried() {
    return check == Check.AT_NEXT_LIVE;
  }

  /** Whether a replay stopped at its window left history to read (the slot is kept meanwhile). */
  boolean history() {
    return history;
  }

  private static Owed of(Check check, boolean history) {
    for (Owed o : ALL) {
      if (o.check == check && o.history == history) {
        return o;
      }
    }
    throw new AssertionError(check + "/" + history);
  }
}
