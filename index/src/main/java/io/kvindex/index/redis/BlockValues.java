package io.kvindex.index.redis;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A prompt's block values as they came in a reply, without copies: per block, the array holding its
 * entries and where they lie in it (a block field's value less its locator, or a slot of a segment
 * value), or no array for a block no one holds. Blocks name their array by its index in a small
 * table of the reply's arrays, so that placing a block writes three ints. Not thread-safe: one
 * instance per decode.
 */
final class BlockValues {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());

  /** Per block: 0 when no one holds it, else 1 + its array's index in {@link #arrays}. */
  private final int[] source;

  /** Per block: where its entries start and end in its array, at 2i and 2i + 1. */
  private final int[] range;

  private byte[][] arrays = new byte[8][];
  private int arrayCount;
  private int size;

  BlockValues(int capacity) {
    source = new int[capacity];
    range = new int[2 * capacity];
  }

  int size() {
    return size;
  }

  /**
   * Appends a block field's value, null when absent; a value of odd length starts with its block's
   * locator, which is skipped.
   */
  void addField(byte[] value) {
    if (value == null) {
      size++;
      return;
    }
    int start = BlockValue.entriesFrom(value);
    set(size++, source(value), start, value.length);
  }

  /** Appends {@code n} absent blocks, for {@link #set} to fill; returns the first one's index. */
  int extend(int n) {
    int first = size;
    size += n;
    return first;
  }

  /** Registers an array that blocks' entries lie in; returns its id for {@link #set}. */
  int source(byte[] array) {
    if (arrayCount == arrays.length) {
      arrays = Arrays.copyOf(arrays, 2 * arrays.length);
    }
    arrays[arrayCount++] = array;
    return arrayCount;
  }

  /** Block {@code i}'s entries are {@code [start, end)} of the array {@code id} names. */
  void set(int i, int id, int start, int end) {
    source[i] = id;
    range[2 * i] = start;
    range[2 * i + 1] = end;
  }

  /** The array holding block {@code i}'s entries, null when no one holds it. */
  byte[] array(int i) {
    return source[i] == 0 ? null : arrays[source[i] - 1];
  }

  int from(int i) {
    return range[2 * i];
  }

  int to(int i) {
    return range[2 * i + 1];
  }

  /** Whether blocks {@code i} and {@code j} have the same entries (absent counts as none). */
  boolean sameEntries(int i, int j) {
    int a = source[i];
    int b = source[j];
    if (a == b && range[2 * i] == range[2 * j] && range[2 * i + 1] == range[2 * j + 1]) {
      return true; // one range: both absent, or a span's slot the same as the slot before it
    }
    if (a == 0 || b == 0) {
      return length(i) == 0 && length(j) == 0;
    }
    return equal(arrays[a - 1], from(i), to(i), arrays[b - 1], from(j), to(j));
  }

  /**
   * Whether two ranges hold the same bytes: eight at a time, which for the few dozen bytes a
   * block's entries take is quicker than {@link Arrays#equals}'s general path.
   */
  static boolean equal(byte[] a, int aFrom, int aTo, byte[] b, int bFrom, int bTo) {
    int n = aTo - aFrom;
    if (n != bTo - bFrom) {
      return false;
    }
    int k = 0;
    for (; k + Long.BYTES <= n; k += Long.BYTES) {
      if ((long) LONGS.get(a, aFrom + k) != (long) LONGS.get(b, bFrom + k)) {
        return false;
      }
    }
    for (; k < n; k++) {
      if (a[aFrom + k] != b[bFrom + k]) {
        return false;
      }
    }
    return true;
  }

  private int length(int i) {
    return source[i] == 0 ? 0 : to(i) - from(i);
  }
}
