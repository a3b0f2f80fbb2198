package io.kvindex.ingester.stream;

/**
 * What a replay did to a gap ({@link Sequencer#replayed} and its siblings), as the replay metric
 * tags it.
 */
public enum GapRepair {
  /** The replay covered the gap and ended. */
  COVERED,
  /** The replay covered the gap but went silent before its end marker. */
  PARTIAL,
  /** The pod has no replay endpoint: purged (unless new) and went on from the live batch. */
  ABSENT,
  /** The replay ended without a batch. */
  EMPTY,
  /** The replay said nothing within the idle bound. */
  SILENT,
  /** The replay began after the gap's first batch: its ring no longer holds it. */
  BEYOND_RING,
  /** The replay sent more than the stream may hold: dropped, purged, went on from live. */
  TOO_LARGE
}
