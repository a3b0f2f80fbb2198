package io.kvindex.index;

/**
 * What one garbage-collection step did. Immutable and thread-safe.
 *
 * @param done true when nothing is left to collect in the group (no retired holder awaits cleanup)
 * @param fieldsScanned block fields examined
 * @param entriesRemoved holder entries of purged streams removed
 * @param slotsFreed holder slots returned for reuse
 */
public record GcResult(boolean done, int fieldsScanned, int entriesRemoved, int slotsFreed) {}
