package io.kvindex.ingester.stream;

/**
 * The rebuild life cycle of one stream, as a state machine: whether lookups see what the index
 * holds of it, or it is being rebuilt from what its engine can replay (staged: kept from lookups
 * until published), and whether history is still to be fetched before the rebuild may be shown.
 * Every transition is in {@link #on}. Immutable; thread-safe.
 *
 * <p>A stream is {@link #SHOWN} once it has a watermark of its own; one that never applied
 * anything, or whose watermark a purge forgot, is {@link #REBUILDING}; its first applied batch
 * makes it {@link #STAGED}, and publishing shows it again. A replay that stopped at its window
 * before the ring's end owes history (the {@code _HISTORY_OWED} states): the rebuild is not
 * published until a later catch-up or replay has answered. A rebuild taken over from another owner
 * starts staged and owing history, since what that owner received and never applied is only in the
 * replay ring.
 */
enum Rebuild {
  /** Lookups see the stream; nothing is being rebuilt. */
  SHOWN(false, false, false),
  /** Shown, and a replay stopped at its window: a rebuild started now waits for more history. */
  SHOWN_HISTORY_OWED(false, false, true),
  /** Rebuilding, nothing applied yet: whatever is applied is staged. */
  REBUILDING(true, false, false),
  /** Rebuilding, nothing applied yet, more history to fetch. */
  REBUILDING_HISTORY_OWED(true, false, true),
  /** Rebuilt in part or whole and staged: published once caught up with the engine. */
  STAGED(true, true, false),
  /** Staged, but more history is to be fetched before it may be published. */
  STAGED_HISTORY_OWED(true, true, true);

  /** What happens to a stream that moves its rebuild on. */
  enum Event {
    /** The stream starts after a watermark of its own. */
    STARTED_AT_WATERMARK,
    /** The stream starts with no watermark: from what its engine can replay. */
    STARTED_NEW,
    /** The stream starts where a former owner was rebuilding it (its entries not yet shown). */
    STARTED_TAKEN_OVER,
    /** A purge that forgot the watermark is done: the stream is rebuilt from its engine. */
    WATERMARK_FORGOTTEN,
    /** A batch (or several as one) was applied. */
    APPLIED,
    /** The staged entries were shown to lookups. */
    PUBLISHED,
    /** A replay stopped at its window, before the ring's end. */
    HISTORY_CUT,
    /** A catch-up or replay answered. */
    CAUGHT_UP
  }

  private final boolean rebuilding;
  private final boolean staged;
  private final boolean historyOwed;

  Rebuild(boolean rebuilding, boolean staged, boolean historyOwed) {
    this.rebuilding = rebuilding;
    this.staged = staged;
    this.historyOwed = historyOwed;
  }

  /** The state after {@code event}. */
  Rebuild on(Event event) {
    return switch (event) {
      case STARTED_AT_WATERMARK -> SHOWN;
      case STARTED_NEW -> REBUILDING;
      case STARTED_TAKEN_OVER -> STAGED_HISTORY_OWED;
      case WATERMARK_FORGOTTEN -> historyOwed ? REBUILDING_HISTORY_OWED : REBUILDING;
      case APPLIED -> rebuilding ? of(true, true, historyOwed) : this;
      case PUBLISHED -> historyOwed ? SHOWN_HISTORY_OWED : SHOWN;
      case HISTORY_CUT -> of(rebuilding, staged, true);
      case CAUGHT_UP -> of(rebuilding, staged, false);
    };
  }

  /** Whether what is applied now is staged (kept from lookups until published). */
  boolean staging() {
    return rebuilding;
  }

  /**
   * Whether the staged entries may be shown, once the stream is past every live batch seen: this
   * rebuild applied something, and no history is owed.
   */
  boolean mayPublish() {
    return this == STAGED;
  }

  private static Rebuild of(boolean rebuilding, boolean staged, boolean historyOwed) {
    for (Rebuild r : values()) {
      if (r.rebuilding == rebuilding && r.staged == staged && r.historyOwed == historyOwed) {
        return r;
      }
    }
    throw new IllegalStateException("a stream shown has nothing staged");
  }
}
