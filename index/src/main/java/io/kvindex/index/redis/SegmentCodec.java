package io.kvindex.index.redis;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Reads a segment or span value (apply.lua writes them): slots of offset (1 byte), block key (8
 * bytes, big-endian), value length (2 bytes) and the block's value, in no particular order; several
 * slots may share an offset where chains branch below the head. A slot whose length is {@link
 * #SAME_AS_BEFORE} has no value of its own: its block has the entries of the slot before it.
 * Thread-safe (stateless).
 */
final class SegmentCodec {
  private static final int SLOT_HEADER = 11;
  private static final VarHandle BIG_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** The length of a slot whose entries are those of the slot before it (spans write them). */
  static final int SAME_AS_BEFORE = 0xffff;

  private SegmentCodec() {}

  /**
   * Whether a segment or span field's value is the overflow marker ({@code O}): apply.lua found
   * more branches than the segment's slots allow, and its blocks are read by their block fields.
   */
  static boolean isOverflowed(byte[] segment) {
    return segment != null && segment.length == 1 && segment[0] == 'O';
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
    int blocks = end - start;
    int i = 0;
    int from = 0;
    int to = 0;
    while (i < segment.length) {
      if (i + SLOT_HEADER > segment.length) {
        throw new IllegalStateException(truncated(segment));
      }
      int header = i;
      int length = ((segment[header + 9] & 0xff) << 8) | (segment[header + 10] & 0xff);
      i = header + SLOT_HEADER;
      if (length != SAME_AS_BEFORE) {
        from = i;
        to = i + length;
        if (to > segment.length) {
          throw new IllegalStateException(truncated(segment));
        }
        i = to;
      }
      int offset = segment[header] & 0xff;
      if (offset < blocks && key(segment, header + 1) == keys[start + offset]) {
        out.set(at + offset, id, from, to);
      }
    }
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
      if (i + SLOT_HEADER > segment.length) {
        throw new IllegalStateException(truncated(segment));
      }
      int header = i;
      int length = ((segment[header + 9] & 0xff) << 8) | (segment[header + 10] & 0xff);
      i = header + SLOT_HEADER;
      if (length != SAME_AS_BEFORE) {
        from = i;
        to = i + length;
        if (to > segment.length) {
          throw new IllegalStateException(truncated(segment));
        }
        i = to;
      }
      int offset = segment[header] & 0xff;
      if (offset < blocks && key(segment, header + 1) == keys[start + offset]) {
        visitor.slot(start + offset, segment, from, to);
      }
    }
  }

  private static long key(byte[] bytes, int at) {
    return (long) BIG_ENDIAN_LONG.get(bytes, at);
  }

  private static String truncated(byte[] segment) {
    return "a segment value of "
        + segment.length
        + " bytes is cut short: the index was written by another version of kvindex or by"
        + " something else; rebuild it (purge every pod) with writers of this version";
  }
}
