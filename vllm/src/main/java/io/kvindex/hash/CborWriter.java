package io.kvindex.hash;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The few canonical CBOR (RFC 8949 §4.2.1, as cbor2 {@code canonical=True}) items block hashing
 * needs: arrays, integers in their shortest form, text and byte strings, null. Writes into one
 * growable buffer that is reused between blocks. A tuple is a CBOR array. Not thread-safe.
 */
final class CborWriter implements KeyWriter {
  private static final int UNSIGNED = 0;
  private static final int NEGATIVE = 1 << 5;
  private static final int BYTES = 2 << 5;
  private static final int TEXT = 3 << 5;
  private static final int ARRAY = 4 << 5;
  private static final int NULL = 0xf6;

  private byte[] buf;
  private int length;

  CborWriter(int initialCapacity) {
    buf = new byte[Math.max(16, initialCapacity)];
  }

  /** Encodes with a fresh writer and returns the bytes: for tests and one-off values. */
  static byte[] encode(java.util.function.Consumer<CborWriter> items) {
    CborWriter writer = new CborWriter(64);
    items.accept(writer);
    return writer.toByteArray();
  }

  @Override
  public void reset() {
    length = 0;
  }

  @Override
  public byte[] buffer() {
    return buf;
  }

  @Override
  public int length() {
    return length;
  }

  @Override
  public void beginTuple(int items) {
    arrayHeader(items);
  }

  @Override
  public void endTuple(int items) {}

  @Override
  public int tokenIds(int[] values, int from, int to) {
    return unsignedInts(values, from, to);
  }

  @Override
  public void none() {
    nil();
  }

  @Override
  public void finish() {}

  byte[] toByteArray() {
    return Arrays.copyOf(buf, length);
  }

  void arrayHeader(int items) {
    head(ARRAY, items);
  }

  /** A signed integer: major type 0 when non-negative, else major type 1 carrying -1-value. */
  @Override
  public void integer(long value) {
    if (value >= 0) {
      head(UNSIGNED, value);
    } else {
      head(NEGATIVE, -1 - value);
    }
  }

  /** An unsigned 64-bit integer given as its bit pattern (values above Long.MAX_VALUE too). */
  void unsigned(long bits) {
    head(UNSIGNED, bits);
  }

  /**
   * Writes {@code values[from..to)} as unsigned integers, the hot path of block hashing.
   *
   * @return -1, or the index of the first negative value (nothing written from there on)
   */
  int unsignedInts(int[] values, int from, int to) {
    ensure(5 * (to - from));
    byte[] b = buf;
    int at = length;
    for (int i = from; i < to; i++) {
      int v = values[i];
      if (v < 24) {
        if (v < 0) {
          length = at;
          return i;
        }
        b[at++] = (byte) v;
      } else if (v < 0x100) {
        b[at++] = 24;
        b[at++] = (byte) v;
      } else if (v < 0x1_0000) {
        b[at++] = 25;
        b[at++] = (byte) (v >>> 8);
        b[at++] = (byte) v;
      } else {
        b[at++] = 26;
        b[at++] = (byte) (v >>> 24);
        b[at++] = (byte) (v >>> 16);
        b[at++] = (byte) (v >>> 8);
        b[at++] = (byte) v;
      }
    }
    length = at;
    return -1;
  }

  void text(String value) {
    text(value.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public void text(byte[] utf8) {
    head(TEXT, utf8.length);
    put(utf8, 0, utf8.length);
  }

  @Override
  public void bytes(byte[] value) {
    bytes(value, 0, value.length);
  }

  void bytes(byte[] value, int offset, int count) {
    head(BYTES, count);
    put(value, offset, count);
  }

  void nil() {
    ensure(1);
    buf[length++] = (byte) NULL;
  }

  private void head(int major, long argument) {
    ensure(9);
    if (Long.compareUnsigned(argument, 24) < 0) {
      buf[length++] = (byte) (major | (int) argument);
    } else if (Long.compareUnsigned(argument, 0x100) < 0) {
      buf[length++] = (byte) (major | 24);
      buf[length++] = (byte) argument;
    } else if (Long.compareUnsigned(argument, 0x1_0000) < 0) {
      buf[length++] = (byte) (major | 25);
      putBigEndian(argument, 2);
    } else if (Long.compareUnsigned(argument, 0x1_0000_0000L) < 0) {
      buf[length++] = (byte) (major | 26);
      putBigEndian(argument, 4);
    } else {
      buf[length++] = (byte) (major | 27);
      putBigEndian(argument, 8);
    }
  }

  private void putBigEndian(long value, int count) {
    for (int shift = (count - 1) * 8; shift >= 0; shift -= 8) {
      buf[length++] = (byte) (value >>> shift);
    }
  }

  private void put(byte[] source, int offset, int count) {
    ensure(count);
    System.arraycopy(source, offset, buf, length, count);
    length += count;
  }

  private void ensure(int more) {
    if (buf.length - length < more) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, length + more));
    }
  }
}
