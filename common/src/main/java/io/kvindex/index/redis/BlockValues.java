package io.kvindex.index.redis;

import java.util.Arrays;

/**
 * A prompt's block values as they came in a reply, without copies: per block, the array holding its
 * entries and where they lie in it (a block field's value less its locator, or a slot of a segment
 * value), or no array for a block no one holds. Not thread-safe: one instance per decode.
 */
final class BlockValues {
  private final byte[][] arrays;
  private final int[] from;
  private final int[] to;
  private int size;

  BlockValues(int capacity) {
    arrays = new byte[capacity][];
    from = new int[capacity];
    to = new int[capacity];
  }

  int size() {
    return size;
  }

  /**
   * Appends a block field's value, null when absent; a value of odd length starts with its block's
   * locator, which is skipped.
   */
  void addField(byte[] value) {
    int start = value != null && value.length % 2 == 1 ? LookupDecoder.LOCATOR_BYTES : 0;
    set(size++, value, start, value == null ? 0 : value.length);
  }

  /** Appends {@code n} absent blocks, for {@link #set} to fill; returns the first one's index. */
  int extend(int n) {
    int first = size;
    size += n;
    return first;
  }

  /** Block {@code i}'s entries are {@code array[start, end)}. */
  void set(int i, byte[] array, int start, int end) {
    arrays[i] = array;
    from[i] = start;
    to[i] = end;
  }

  /** The array holding block {@code i}'s entries, null when no one holds it. */
  byte[] array(int i) {
    return arrays[i];
  }

  int from(int i) {
    return from[i];
  }

  int to(int i) {
    return to[i];
  }

  /** Whether blocks {@code i} and {@code j} have the same entries (absent counts as none). */
  boolean sameEntries(int i, int j) {
    if (arrays[i] == null || arrays[j] == null) {
      return length(i) == 0 && length(j) == 0;
    }
    return Arrays.equals(arrays[i], from[i], to[i], arrays[j], from[j], to[j]);
  }

  private int length(int i) {
    return arrays[i] == null ? 0 : to[i] - from[i];
  }
}
