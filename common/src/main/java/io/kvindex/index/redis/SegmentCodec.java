package io.kvindex.index.redis;

/**
 * Reads a segment value (apply.lua writes them): slots of offset (1 byte), block key (8 bytes,
 * big-endian), value length (2 bytes) and the block's value, in no particular order; several slots
 * may share an offset where chains branch below the segment's head. Thread-safe (stateless).
 */
final class SegmentCodec {
  private static final int SLOT_HEADER = 11;

  private SegmentCodec() {}

  /**
   * Places the entries of the prompt's blocks {@code start} (the segment's head) to {@code end} in
   * {@code out}, block {@code start + i} at {@code at + i}, as ranges of {@code segment}; a block
   * the segment does not describe is left as it was (absent).
   *
   * @param segment the segment value, or null when the segment does not exist
   * @throws IllegalStateException if the value is cut short
   */
  static void read(BlockValues out, int at, byte[] segment, long[] keys, int start, int end) {
    int blocks = end - start;
    int i = 0;
    while (segment != null && i < segment.length) {
      if (i + SLOT_HEADER > segment.length) {
        throw new IllegalStateException(truncated(segment));
      }
      int offset = segment[i] & 0xff;
      int length = ((segment[i + 9] & 0xff) << 8) | (segment[i + 10] & 0xff);
      int from = i + SLOT_HEADER;
      if (from + length > segment.length) {
        throw new IllegalStateException(truncated(segment));
      }
      if (offset < blocks && key(segment, i + 1) == keys[start + offset]) {
        out.set(at + offset, segment, from, from + length);
      }
      i = from + length;
    }
  }

  private static long key(byte[] bytes, int at) {
    long key = 0;
    for (int b = 0; b < 8; b++) {
      key = (key << 8) | (bytes[at + b] & 0xff);
    }
    return key;
  }

  private static String truncated(byte[] segment) {
    return "a segment value of "
        + segment.length
        + " bytes is cut short: the index was written by another version of kvindex or by"
        + " something else; rebuild it (purge every pod) with writers of this version";
  }
}
