package io.kvindex.index.redis;

/**
 * Reads a {@link SegmentValue} in place, as lookups do: each slot's entries as a range of the
 * value, without copies. Thread-safe (stateless).
 */
final class SegmentCodec {
  private SegmentCodec() {}

  /**
   * Whether a segment or span field's value is the overflow marker ({@code O}): apply.lua found
   * more branches than the segment's slots allow, and its blocks are read by their block fields.
   */
  static boolean isOverflowed(byte[] segment) {
    return SegmentValue.isOverflowed(segment);
  }

  /**
   * Places the entries of the prompt's blocks {@code start} (the segment's head) to {@code end} in
   * {@code out}, block {@code start + i} at {@code at + i}, as ranges of {@code segment}; a block
   * the segment does not describe is left as it was (absent).
   *
   * @param segment the segment value, or null when the segment does not exist
   * @throws IllegalStateException if the value is cut short
   */
  static void read(BlockValues out, int at, byte[] segment, long[] keys, int start, int end) {
    if (segment == null) {
      return;
    }
    int id = out.source(segment);
    forEachSlot(
        segment,
        keys,
        start,
        end,
        (block, value, from, to) -> out.set(at + block - start, id, from, to));
  }

  /** Told each slot of a segment that describes a prompt block: where that block's entries lie. */
  @FunctionalInterface
  interface SlotVisitor {
    /**
     * @param block the prompt's block the slot describes
     * @param value the segment value its entries are in, {@code [from, to)}
     */
    void slot(int block, byte[] value, int from, int to);
  }

  /**
   * As {@link #read(BlockValues, int, byte[], long[], int, int)}, telling {@code visitor} each slot
   * whose key is the prompt's at its offset instead of placing it.
   */
  static void forEachSlot(byte[] segment, long[] keys, int start, int end, SlotVisitor visitor) {
    if (segment == null) {
      return;
    }
    int blocks = end - start;
    int i = 0;
    int from = 0;
    int to = 0;
    while (i < segment.length) {
      int header = SegmentValue.checkedHeader(segment, i);
      int length = SegmentValue.lengthAt(segment, header);
      i = header + SegmentValue.SLOT_HEADER;
      if (length != SegmentValue.SAME_AS_BEFORE) {
        from = i;
        to = SegmentValue.checkedEnd(segment, i + length);
        i = to;
      }
      int offset = SegmentValue.offsetAt(segment, header);
      if (offset < blocks && SegmentValue.keyAt(segment, header) == keys[start + offset]) {
        visitor.slot(start + offset, segment, from, to);
      }
    }
  }
}
