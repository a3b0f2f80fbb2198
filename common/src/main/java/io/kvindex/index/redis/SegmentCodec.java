package io.kvindex.index.redis;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reads a segment value (apply.lua writes them): slots of offset (1 byte), block key (8 bytes,
 * big-endian), value length (2 bytes) and the block's value, in no particular order; several slots
 * may share an offset where chains branch below the segment's head. Thread-safe (stateless).
 */
final class SegmentCodec {
  private static final int SLOT_HEADER = 11;

  private SegmentCodec() {}

  /**
   * The values of the prompt's blocks {@code start} (the segment's head) to {@code end}, null for a
   * block the segment does not describe.
   *
   * @param segment the segment value, or null when the segment does not exist
   * @throws IllegalStateException if the value is cut short
   */
  static List<byte[]> values(byte[] segment, long[] keys, int start, int end) {
    byte[][] out = new byte[end - start][];
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
      if (offset < out.length && key(segment, i + 1) == keys[start + offset]) {
        out[offset] = Arrays.copyOfRange(segment, from, from + length);
      }
      i = from + length;
    }
    List<byte[]> values = new ArrayList<>(out.length);
    values.addAll(Arrays.asList(out));
    return values;
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
