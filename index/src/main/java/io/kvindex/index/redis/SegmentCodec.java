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
    Slots slots = new Slots(segment, keys, start, end);
    while (slots.next()) {
      out.set(at + slots.block() - start, id, slots.from(), slots.to());
    }
  }

  /**
   * The slots of a segment that describe prompt blocks, walked one by one: each slot whose key is
   * the prompt's at its offset, with where its entries lie in the value. A loop over {@link #next}
   * rather than a callback, so that each reader's loop stays its own. Not thread-safe.
   */
  static final class Slots {
    private final byte[] segment;
    private final long[] keys;
    private final int start;
    private final int blocks;
    private final int base;
    private int i;
    private int from;
    private int to;
    private int block;

    /**
     * A segment's own slots (offsets from 0).
     *
     * @param segment the segment value, or null when the segment does not exist (no slots)
     * @param keys the prompt's block keys
     * @param start the prompt block the segment's head is
     * @param end the prompt's block past the segment's last
     */
    Slots(byte[] segment, long[] keys, int start, int end) {
      this(segment, keys, start, end, 0);
    }

    /**
     * The slots whose offsets start at {@code base}: a sparse cache group's, kept in its anchor's
     * segments (apply.lua, mergedInto), offset {@code base} standing for the head.
     */
    Slots(byte[] segment, long[] keys, int start, int end, int base) {
      this.segment = segment;
      this.keys = keys;
      this.start = start;
      this.blocks = end - start;
      this.base = base;
    }

    /**
     * Moves to the next slot that describes a prompt block.
     *
     * @return false when there is none left
     * @throws IllegalStateException if the value is cut short
     */
    boolean next() {
      byte[] s = segment;
      if (s == null) {
        return false;
      }
      while (i < s.length) {
        int header = SegmentValue.checkedHeader(s, i);
        int length = SegmentValue.lengthAt(s, header);
        i = header + SegmentValue.SLOT_HEADER;
        if (length != SegmentValue.SAME_AS_BEFORE) {
          from = i;
          to = SegmentValue.checkedEnd(s, i + length);
          i = to;
        }
        int offset = SegmentValue.offsetAt(s, header) - base;
        if (offset >= 0
            && offset < blocks
            && SegmentValue.keyAt(s, header) == keys[start + offset]) {
          block = start + offset;
          return true;
        }
      }
      return false;
    }

    /** The prompt's block the slot describes. */
    int block() {
      return block;
    }

    /** The value the slot's entries are in, {@code [from, to)}. */
    byte[] value() {
      return segment;
    }

    int from() {
      return from;
    }

    int to() {
      return to;
    }
  }
}
