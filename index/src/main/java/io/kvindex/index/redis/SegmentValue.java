package io.kvindex.index.redis;

import java.io.ByteArrayOutputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A segment or span field's value in a group's blocks hash: slots of offset (1 byte), block key (8
 * bytes, big-endian), entries' length (2 bytes, big-endian) and the block's entries ({@link
 * BlockValue}'s shape), in no particular order; several slots may share an offset where chains
 * branch below the head. In a span, a slot whose entries are those of the slot before it has the
 * length {@link #SAME_AS_BEFORE} and no entries. A segment or span that overflowed is the marker
 * {@link #OVERFLOWED} ({@code O}): its blocks are read by their block fields. The scripts read and
 * write it with the Lua library {@code segment_value.lua}; this is its one Java definition
 * (StoredValueFormatsTest holds the two to the same bytes), and {@link SegmentCodec} reads it in
 * place on the lookup path. Immutable; thread-safe.
 *
 * @param slots the value's slots, in its order (none for the overflow marker)
 * @param overflowed whether the value is the overflow marker
 */
public record SegmentValue(List<Slot> slots, boolean overflowed) {
  private static final VarHandle BIG_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** Bytes of a slot's header: offset, block key, entries' length. */
  static final int SLOT_HEADER = 11;

  /** The length of a slot whose entries are those of the slot before it (spans write them). */
  static final int SAME_AS_BEFORE = 0xffff;

  /** The value of a segment or span that overflowed. */
  static final byte OVERFLOWED = 'O';

  /**
   * One slot: the block at {@code offset} from the head whose key is {@code key}.
   *
   * @param entries its entries, or null for a span's slot that has the entries of the slot before
   */
  public record Slot(int offset, long key, List<BlockValue.Entry> entries) {
    public Slot {
      entries = entries == null ? null : List.copyOf(entries);
    }
  }

  public SegmentValue {
    slots = List.copyOf(slots);
  }

  /** The value's bytes. */
  public byte[] encode() {
    if (overflowed) {
      return new byte[] {OVERFLOWED};
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Slot slot : slots) {
      out.write(slot.offset());
      for (int k = 0; k < 8; k++) {
        out.write((int) (slot.key() >>> (56 - 8 * k)));
      }
      byte[] entries =
          slot.entries() == null ? new byte[0] : new BlockValue(null, slot.entries()).encode();
      int length = slot.entries() == null ? SAME_AS_BEFORE : entries.length;
      out.write(length >>> 8);
      out.write(length);
      out.writeBytes(entries);
    }
    return out.toByteArray();
  }

  /**
   * The value in {@code value}, or null for none.
   *
   * @throws IllegalStateException if the value is cut short
   */
  public static SegmentValue decode(byte[] value) {
    if (value == null) {
      return null;
    }
    if (isOverflowed(value)) {
      return new SegmentValue(List.of(), true);
    }
    List<Slot> slots = new ArrayList<>();
    for (int i = 0; i < value.length; ) {
      int header = checkedHeader(value, i);
      int length = lengthAt(value, header);
      i = header + SLOT_HEADER;
      List<BlockValue.Entry> entries = null;
      if (length != SAME_AS_BEFORE) {
        entries = BlockValue.entries(value, i, checkedEnd(value, i + length));
        i += length;
      }
      slots.add(new Slot(offsetAt(value, header), keyAt(value, header), entries));
    }
    return new SegmentValue(slots, false);
  }

  /** Whether a value is the overflow marker. */
  static boolean isOverflowed(byte[] value) {
    return value != null && value.length == 1 && value[0] == OVERFLOWED;
  }

  /** The offset from the head of the slot whose header is at {@code header}. */
  static int offsetAt(byte[] value, int header) {
    return value[header] & 0xff;
  }

  /** The block key of the slot whose header is at {@code header}. */
  static long keyAt(byte[] value, int header) {
    return (long) BIG_ENDIAN_LONG.get(value, header + 1);
  }

  /** The entries' length of the slot whose header is at {@code header} (or SAME_AS_BEFORE). */
  static int lengthAt(byte[] value, int header) {
    return ((value[header + 9] & 0xff) << 8) | (value[header + 10] & 0xff);
  }

  /** {@code header}, checked to leave room for a whole slot header. */
  static int checkedHeader(byte[] value, int header) {
    if (header + SLOT_HEADER > value.length) {
      throw new IllegalStateException(truncated(value));
    }
    return header;
  }

  /** {@code end}, checked to lie within the value. */
  static int checkedEnd(byte[] value, int end) {
    if (end > value.length) {
      throw new IllegalStateException(truncated(value));
    }
    return end;
  }

  private static String truncated(byte[] value) {
    return "a segment value of "
        + value.length
        + " bytes is cut short: the index was written by another version of kvindex or by"
        + " something else; rebuild it (purge every pod) with writers of this version";
  }
}
