package io.kvindex.index.redis;

import java.util.ArrayList;
import java.util.List;

/**
 * A block field's value in a group's blocks hash: the block's {@link Locator} once its chain
 * position is known ({@value #LOCATOR_BYTES} bytes: its head's key, 8 bytes big-endian, then its
 * position in the chain, 3 bytes big-endian; so a located value has odd length), then its entries
 * of {@value #ENTRY_BYTES} bytes: holder slot (12 bits) ‖ tiers (4 bits, {@code Tier.bit()}). A
 * segment's or span's slot ({@link SegmentValue}) holds entries of the same shape. The scripts read
 * and write it with the Lua library {@code block_value.lua}; this is its one Java definition
 * (StoredValueFormatsTest holds the two to the same bytes). The static methods read a value in
 * place, as the lookup path does; the record is for tools and tests. Immutable; thread-safe.
 *
 * @param locator the block's locator, or null for an unlocated block
 * @param entries its holders' entries, in the value's order
 */
public record BlockValue(Locator locator, List<Entry> entries) {
  /** Bytes of a locator at the head of a located value. */
  static final int LOCATOR_BYTES = 11;

  /** Bytes of one entry. */
  static final int ENTRY_BYTES = 2;

  /** The tier bits of an entry. */
  static final int TIER_BITS = 0x0f;

  /** Where a block is in its chain: its head's key, and its position from the chain's block 0. */
  public record Locator(long head, int position) {}

  /**
   * One holder's entry: its slot, and the tiers ({@code Tier.bit()} bits) it holds the block in.
   */
  public record Entry(int slot, int tiers) {}

  public BlockValue {
    entries = List.copyOf(entries);
  }

  /** The value's bytes. */
  public byte[] encode() {
    int start = locator == null ? 0 : LOCATOR_BYTES;
    byte[] out = new byte[start + ENTRY_BYTES * entries.size()];
    if (locator != null) {
      for (int k = 0; k < 8; k++) {
        out[k] = (byte) (locator.head() >>> (56 - 8 * k));
      }
      int p = locator.position();
      out[8] = (byte) (p >>> 16);
      out[9] = (byte) (p >>> 8);
      out[10] = (byte) p;
    }
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      out[start + 2 * i] = (byte) (e.slot() >>> 4);
      out[start + 2 * i + 1] = (byte) ((e.slot() & 0x0f) << 4 | (e.tiers() & TIER_BITS));
    }
    return out;
  }

  /** The value in {@code value}, or null for none. */
  public static BlockValue decode(byte[] value) {
    if (value == null) {
      return null;
    }
    Locator locator =
        isLocated(value) ? new Locator(Bytes.longAt(value, 0), position(value)) : null;
    return new BlockValue(locator, entries(value, entriesFrom(value), value.length));
  }

  /** The entries in {@code value[from, to)} (a segment's slot, or a block value's entries). */
  public static List<Entry> entries(byte[] value, int from, int to) {
    List<Entry> out = new ArrayList<>((to - from) / ENTRY_BYTES);
    for (int e = from; e + 1 < to; e += ENTRY_BYTES) {
      out.add(new Entry(slotAt(value, e), tiersAt(value, e)));
    }
    return out;
  }

  /** Whether the value starts with its block's locator (it has odd length). */
  static boolean isLocated(byte[] value) {
    return value.length % 2 == 1;
  }

  /** Where the value's entries start: after its locator, if it has one. */
  static int entriesFrom(byte[] value) {
    return isLocated(value) ? LOCATOR_BYTES : 0;
  }

  /** The chain position in a located value's locator. */
  static int position(byte[] value) {
    return ((value[8] & 0xff) << 16) | ((value[9] & 0xff) << 8) | (value[10] & 0xff);
  }

  /** The holder slot of the entry at byte {@code e}. */
  static int slotAt(byte[] value, int e) {
    return ((value[e] & 0xff) << 4) | ((value[e + 1] & 0xf0) >>> 4);
  }

  /** The tier bits of the entry at byte {@code e}. */
  static int tiersAt(byte[] value, int e) {
    return value[e + 1] & TIER_BITS;
  }
}
