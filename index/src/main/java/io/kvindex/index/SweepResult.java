package io.kvindex.index;

/**
 * What one step of forgetting departed pods did. Immutable and thread-safe.
 *
 * @param done true when a whole pass over the group's stream and pod records has completed
 * @param recordsScanned stream and pod records examined
 * @param streamsForgotten stream records (watermark, holder slot) removed
 * @param podsForgotten pod records removed
 */
public record SweepResult(
    boolean done, int recordsScanned, int streamsForgotten, int podsForgotten) {}
