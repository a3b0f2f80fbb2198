package io.kvindex.index;

/**
 * What one garbage-collection step did, and the group's holder slots after it. Immutable and
 * thread-safe.
 *
 * @param done true when nothing is left to collect in the group (no retired holder awaits cleanup)
 * @param fieldsScanned block fields examined
 * @param entriesRemoved holder entries of purged streams removed
 * @param slotsFreed holder slots returned for reuse
 * @param slotsAvailable holder slots a new holder could take now (freed, or never handed out): at
 *     0, a batch that needs one is refused; -1 when Redis did not answer the step
 * @param slotsDead retired holder slots still awaiting cleanup; -1 when Redis did not answer
 */
public record GcResult(
    boolean done,
    int fieldsScanned,
    int entriesRemoved,
    int slotsFreed,
    int slotsAvailable,
    int slotsDead) {
  /** Holder slots of one index group: streams with blocks, and retired ones awaiting cleanup. */
  public static final int HOLDER_SLOTS = 4095;

  /** The step Redis did not answer (temporary errors until the retry budget ran out). */
  public static GcResult unanswered() {
    return new GcResult(false, 0, 0, 0, -1, -1);
  }
}
