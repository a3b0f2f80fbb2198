package io.kvindex.ingester.stream;

import io.kvindex.index.PurgeMode;

/**
 * A purge a stream must run before anything else is applied ({@link Action.RunPurge}). Immutable;
 * thread-safe.
 *
 * @param reason the metric tag ({@code sleep}, {@code engine_restart}, ...)
 * @param mode whether the index forgets the watermark
 * @param continueFrom the sequence to go on from once done, or -1 to keep the current one
 */
public record Purge(String reason, PurgeMode mode, long continueFrom) {

  /** Forget the watermark and go on from {@code seq}: what the stream held before it is lost. */
  static Purge goOnFrom(String reason, long seq) {
    return new Purge(reason, PurgeMode.RESET_WATERMARK, seq);
  }

  /** Forget the watermark and start over from sequence 0, as a new stream would. */
  static Purge startOver(String reason) {
    return goOnFrom(reason, 0);
  }

  /** Purge what the index holds of the stream, keeping its watermark. */
  static Purge keepingWatermark(String reason) {
    return new Purge(reason, PurgeMode.KEEP_WATERMARK, -1);
  }

  /** Whether this purge forgets the watermark and starts over from sequence 0. */
  boolean startsOver() {
    return mode == PurgeMode.RESET_WATERMARK && continueFrom == 0;
  }
}
