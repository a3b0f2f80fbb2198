package io.kvindex.hash;

import java.util.Arrays;

/**
 * Python's {@code pickle.dumps(value, protocol=5)} for the values vLLM hashes with {@code sha256}
 * and {@code xxhash}: tuples, ints, str, bytes and None, written byte for byte as CPython's pickler
 * writes them (pickletools names the opcodes). Not thread-safe.
 */
final class PickleWriter implements KeyWriter {
  /*
   * Implementation notes.
   *
   * Written from the pickle format (PEP 3154 framing, PEP 574's protocol 5) and CPython's
   * Pickler, whose C and Python versions write the same bytes:
   *
   * - The value is PROTO 5, then its opcodes in frames, then STOP. A frame is FRAME + its length
   *   (8 bytes little-endian) + its opcodes; the pickler closes a frame at the start of saving an
   *   object once it holds 64 KiB or more, and at the end; a frame under 4 bytes is written
   *   without the FRAME header. A str or bytes of 64 KiB or more is written outside any frame: the
   *   open frame is closed first, and the next one starts after it.
   * - Ints: BININT1 (0..255), BININT2 (256..65535), BININT (signed 32-bit), else LONG1 with the
   *   shortest little-endian two's complement. Ints are never memoized.
   * - str: SHORT_BINUNICODE (< 256 UTF-8 bytes), BINUNICODE, then MEMOIZE; bytes likewise with
   *   SHORT_BINBYTES / BINBYTES. A tuple: EMPTY_TUPLE when empty (not memoized); TUPLE1..3 after
   *   its items when it has 1 to 3; MARK, its items, TUPLE when more; then MEMOIZE.
   * - The memo is keyed by object identity: an object met again is written as BINGET of its
   *   index. The only repeats a block's value can hold are CPython's shared single objects: the
   *   empty str and the one-character str of each code point below 256 (a LoRA name "a" and a
   *   cache salt "a" are one object in the engine). Those are the only ones this writer looks up.
   */

  private static final byte PROTO = (byte) 0x80;
  private static final byte FRAME = (byte) 0x95;
  private static final byte STOP = '.';
  private static final byte MARK = '(';
  private static final byte TUPLE = 't';
  private static final byte[] TUPLE_N = {')', (byte) 0x85, (byte) 0x86, (byte) 0x87};
  private static final byte NONE = 'N';
  private static final byte BININT1 = 'K';
  private static final byte BININT2 = 'M';
  private static final byte BININT = 'J';
  private static final byte LONG1 = (byte) 0x8a;
  private static final byte SHORT_BINUNICODE = (byte) 0x8c;
  private static final byte BINUNICODE = 'X';
  private static final byte SHORT_BINBYTES = 'C';
  private static final byte BINBYTES = 'B';
  private static final byte MEMOIZE = (byte) 0x94;
  private static final byte BINGET = 'h';
  private static final byte LONG_BINGET = 'j';

  private static final int FRAME_SIZE_TARGET = 64 * 1024;
  private static final int FRAME_SIZE_MIN = 4;
  private static final int FRAME_HEADER = 9;

  private byte[] buf;
  private int length;

  /** Where the open frame's header goes; its opcodes start {@link #FRAME_HEADER} bytes later. */
  private int frameStart;

  private int memoSize;

  /** Memo index + 1 of the shared one-character str of each code point below 256, 0 if none. */
  private final int[] sharedChars = new int[256];

  /** The code points set in {@link #sharedChars}, to clear them cheaply. */
  private final int[] sharedSet = new int[256];

  private int sharedCount;

  /** Memo index + 1 of the shared empty str, 0 if none. */
  private int sharedEmpty;

  PickleWriter(int initialCapacity) {
    buf = new byte[Math.max(64, initialCapacity)];
    reset();
  }

  /** Pickles with a fresh writer and returns the bytes: for tests and one-off values. */
  static byte[] encode(java.util.function.Consumer<PickleWriter> items) {
    PickleWriter writer = new PickleWriter(64);
    items.accept(writer);
    writer.finish();
    return Arrays.copyOf(writer.buf, writer.length);
  }

  @Override
  public void reset() {
    length = 0;
    buf[length++] = PROTO;
    buf[length++] = 5;
    openFrame();
    memoSize = 0;
    sharedEmpty = 0;
    while (sharedCount > 0) {
      sharedChars[sharedSet[--sharedCount]] = 0;
    }
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
    objectBoundary();
    if (items > 3) {
      put(MARK);
    }
  }

  @Override
  public void endTuple(int items) {
    if (items > 3) {
      put(TUPLE);
    } else {
      put(TUPLE_N[items]);
      if (items == 0) {
        return;
      }
    }
    memoize();
  }

  @Override
  public void integer(long value) {
    objectBoundary();
    ensure(10);
    if (value >= 0 && value <= 0xffff) {
      if (value <= 0xff) {
        buf[length++] = BININT1;
        buf[length++] = (byte) value;
      } else {
        buf[length++] = BININT2;
        buf[length++] = (byte) value;
        buf[length++] = (byte) (value >>> 8);
      }
    } else if (value >= Integer.MIN_VALUE && value <= Integer.MAX_VALUE) {
      buf[length++] = BININT;
      putIntLe((int) value);
    } else {
      // Python's encode_long: the fewest little-endian bytes whose two's complement is value.
      int bytes = (64 - Long.numberOfLeadingZeros(value < 0 ? ~value : value)) / 8 + 1;
      buf[length++] = LONG1;
      buf[length++] = (byte) bytes;
      for (int i = 0; i < bytes; i++) {
        buf[length++] = (byte) (value >> (8 * i));
      }
    }
  }

  @Override
  public int tokenIds(int[] values, int from, int to) {
    for (int i = from; i < to; i++) {
      int v = values[i];
      if (v < 0) {
        return i;
      }
      if (length - frameStart - FRAME_HEADER >= FRAME_SIZE_TARGET) {
        closeFrame();
        openFrame();
      }
      ensure(5);
      byte[] b = buf;
      int at = length;
      if (v <= 0xff) {
        b[at++] = BININT1;
        b[at++] = (byte) v;
      } else if (v <= 0xffff) {
        b[at++] = BININT2;
        b[at++] = (byte) v;
        b[at++] = (byte) (v >>> 8);
      } else {
        b[at++] = BININT;
        b[at++] = (byte) v;
        b[at++] = (byte) (v >>> 8);
        b[at++] = (byte) (v >>> 16);
        b[at++] = (byte) (v >>> 24);
      }
      length = at;
    }
    return -1;
  }

  @Override
  public void text(byte[] utf8) {
    objectBoundary();
    int shared = sharedObject(utf8);
    if (shared > 0) {
      memoGet(shared - 1);
      return;
    }
    sized(SHORT_BINUNICODE, BINUNICODE, utf8);
    int index = memoize();
    if (shared < 0) {
      rememberShared(utf8, index);
    }
  }

  @Override
  public void bytes(byte[] value) {
    objectBoundary();
    sized(SHORT_BINBYTES, BINBYTES, value);
    memoize();
  }

  @Override
  public void none() {
    objectBoundary();
    put(NONE);
  }

  @Override
  public void finish() {
    put(STOP);
    closeFrame();
  }

  /** Writes a str or bytes: short form, long form, or (64 KiB and more) outside the frames. */
  private void sized(byte shortOp, byte longOp, byte[] data) {
    int n = data.length;
    if (n <= 0xff) {
      ensure(2 + n);
      buf[length++] = shortOp;
      buf[length++] = (byte) n;
    } else {
      boolean large = n >= FRAME_SIZE_TARGET;
      if (large) {
        closeFrame();
      }
      ensure(5 + n + FRAME_HEADER);
      buf[length++] = longOp;
      putIntLe(n);
      System.arraycopy(data, 0, buf, length, n);
      length += n;
      if (large) {
        openFrame();
      }
      return;
    }
    System.arraycopy(data, 0, buf, length, n);
    length += n;
  }

  /**
   * Whether {@code utf8} is one of CPython's shared str objects: 0 if not, a positive memo index +
   * 1 when it was already written, -1 when it is shared and new.
   */
  private int sharedObject(byte[] utf8) {
    if (utf8.length == 0) {
      return sharedEmpty > 0 ? sharedEmpty : -1;
    }
    int codePoint = latin1CodePoint(utf8);
    if (codePoint < 0) {
      return 0;
    }
    return sharedChars[codePoint] > 0 ? sharedChars[codePoint] : -1;
  }

  private void rememberShared(byte[] utf8, int index) {
    if (utf8.length == 0) {
      sharedEmpty = index + 1;
    } else {
      int codePoint = latin1CodePoint(utf8);
      sharedChars[codePoint] = index + 1;
      sharedSet[sharedCount++] = codePoint;
    }
  }

  /** The code point of a one-character str below U+0100, or -1. */
  private static int latin1CodePoint(byte[] utf8) {
    if (utf8.length == 1 && utf8[0] >= 0) {
      return utf8[0];
    }
    if (utf8.length == 2 && (utf8[0] & 0xfe) == 0xc2) {
      return ((utf8[0] & 0x1f) << 6) | (utf8[1] & 0x3f);
    }
    return -1;
  }

  private int memoize() {
    put(MEMOIZE);
    return memoSize++;
  }

  private void memoGet(int index) {
    ensure(5);
    if (index < 256) {
      buf[length++] = BINGET;
      buf[length++] = (byte) index;
    } else {
      buf[length++] = LONG_BINGET;
      putIntLe(index);
    }
  }

  /** Where the pickler starts saving an object: it closes a frame of 64 KiB or more. */
  private void objectBoundary() {
    if (length - frameStart - FRAME_HEADER >= FRAME_SIZE_TARGET) {
      closeFrame();
      openFrame();
    }
  }

  private void openFrame() {
    ensure(FRAME_HEADER);
    frameStart = length;
    length += FRAME_HEADER;
  }

  /** Writes the open frame's header, or drops the room kept for it when the frame is too small. */
  private void closeFrame() {
    int data = length - frameStart - FRAME_HEADER;
    if (data >= FRAME_SIZE_MIN) {
      buf[frameStart] = FRAME;
      for (int i = 0; i < 8; i++) {
        buf[frameStart + 1 + i] = (byte) ((long) data >>> (8 * i));
      }
    } else {
      System.arraycopy(buf, frameStart + FRAME_HEADER, buf, frameStart, data);
      length -= FRAME_HEADER;
    }
    frameStart = length;
  }

  private void put(byte opcode) {
    ensure(1);
    buf[length++] = opcode;
  }

  private void putIntLe(int value) {
    buf[length++] = (byte) value;
    buf[length++] = (byte) (value >>> 8);
    buf[length++] = (byte) (value >>> 16);
    buf[length++] = (byte) (value >>> 24);
  }

  private void ensure(int more) {
    if (buf.length - length < more) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, length + more));
    }
  }
}
