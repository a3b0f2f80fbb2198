package io.kvindex.ingester.stream;

import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;

/**
 * Where one stream stands in the index: the next sequence to apply ({@code expected}, the index's
 * watermark + 1), the last one applied, the purge due before anything else is applied, and whether
 * lookups see what is applied (the {@link Rebuild} life cycle). It moves on what the index answered
 * (a watermark read, an apply, a purge, a publish) and on the purges asked for; the {@link
 * Sequencer} decides when. Not thread-safe: one worker thread drives it.
 */
final class StreamPosition {
  private long expected = -1;
  private long applied = -1;
  private Purge purge;
  private Rebuild rebuild = Rebuild.SHOWN;

  /**
   * Starts after the index's watermark ({@code -1} when it has none); {@code staged}: a former
   * owner was rebuilding the stream, so this one goes on rebuilding and publishes.
   */
  void start(long watermark, boolean staged) {
    expected = watermark + 1;
    applied = watermark;
    // a new stream starts from what its engine can replay
    rebuild =
        rebuild.on(
            staged
                ? Rebuild.Event.STARTED_TAKEN_OVER
                : watermark < 0 ? Rebuild.Event.STARTED_NEW : Rebuild.Event.STARTED_AT_WATERMARK);
  }

  /** The next sequence to apply, or -1 before the watermark is read. */
  long expected() {
    return expected;
  }

  /** The last applied sequence, or -1. */
  long applied() {
    return applied;
  }

  /** Whether the stream's watermark has been read from the index. */
  boolean started() {
    return expected >= 0;
  }

  /** The purge due before anything else is applied, or null. */
  Purge purge() {
    return purge;
  }

  /** Whether what is applied now is staged (kept from lookups until published). */
  boolean staging() {
    return rebuild.staging();
  }

  /** Whether the staged entries may be shown once the stream is past every live batch seen. */
  boolean mayPublish() {
    return rebuild.mayPublish();
  }

  /** The batches through {@code seq} were applied: the stream goes on after it. */
  void advanced(long seq) {
    rebuild = rebuild.on(Rebuild.Event.APPLIED);
    expected = seq + 1;
    applied = seq;
  }

  /** The index's watermark, as a DUPLICATE or GAP answer carried it: the truth. */
  void watermark(long watermark) {
    expected = watermark + 1;
    applied = watermark;
  }

  /** Asks for a purge keeping the watermark, unless one is due (one due purge is enough). */
  void requestPurge(String reason) {
    if (purge == null) {
      purge = Purge.keepingWatermark(reason);
    }
  }

  /** Purge, forget the watermark and start over from sequence 0, in place of any purge due. */
  void startOver(String reason) {
    purge = Purge.startOver(reason);
  }

  /**
   * {@link #startOver} unless the purge due starts over already (it then does all of it and is
   * kept); returns whether it was asked for.
   */
  boolean startOverUnlessDue(String reason) {
    if (purge != null && purge.startsOver()) {
      return false;
    }
    startOver(reason);
    return true;
  }

  /**
   * What the stream held before {@code seq} is lost: it goes on from {@code seq}, purged first
   * unless it never applied anything (then nothing of it is in the index to be wrong).
   */
  void goOnFrom(long seq, String reason) {
    if (applied < 0) {
      expected = seq;
    } else {
      purge = Purge.goOnFrom(reason, seq);
    }
  }

  /** What the purge due did; true when it is done. */
  boolean purged(PurgeStatus status) {
    if (status != PurgeStatus.PURGED) {
      return false;
    }
    if (purge.mode() == PurgeMode.RESET_WATERMARK) {
      applied = -1;
      rebuild = rebuild.on(Rebuild.Event.WATERMARK_FORGOTTEN);
    }
    if (purge.continueFrom() >= 0) {
      expected = purge.continueFrom();
    }
    purge = null;
    return true;
  }

  /** What the publish of the staged entries did; true when it is done. */
  boolean published(PurgeStatus status) {
    if (status != PurgeStatus.PURGED) {
      return false;
    }
    rebuild = rebuild.on(Rebuild.Event.PUBLISHED);
    return true;
  }

  /** A catch-up or replay answered: no history is owed any longer. */
  void caughtUp() {
    rebuild = rebuild.on(Rebuild.Event.CAUGHT_UP);
  }

  /** A replay stopped at its window, before the ring's end: history is owed. */
  void historyCut() {
    rebuild = rebuild.on(Rebuild.Event.HISTORY_CUT);
  }
}
