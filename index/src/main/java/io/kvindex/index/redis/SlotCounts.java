package io.kvindex.index.redis;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A holder slot's counts in its group's counts hash, kept by every script that adds or strips an
 * entry: {@code <slot>:blocks} (its entries in the blocks hash, any tier) and {@code
 * <slot>:gpu|cpu|storage|other} (its entries holding that tier), each decimal (HINCRBY), so that
 * inspecting a stream never scans the blocks hash; beside them, the hash's {@link
 * #OVERFLOWED_SEGMENTS_FIELD} counts the segments that overflowed. The scripts read and write them
 * with the Lua library {@code slot_counts.lua}; this is their one Java definition
 * (StoredValueFormatsTest holds the two to the same fields). Immutable; thread-safe.
 */
public record SlotCounts(long blocks, long gpu, long cpu, long storage, long other) {
  /** The counts' names, in the order of the fields {@link #fields} gives. */
  static final List<String> NAMES = List.of("blocks", "gpu", "cpu", "storage", "other");

  /** The field of a group's counts hash counting the segments that overflowed (decimal). */
  public static final byte[] OVERFLOWED_SEGMENTS_FIELD =
      "overflowed-segments".getBytes(StandardCharsets.US_ASCII);

  /** A slot's count fields: entries, then GPU, CPU, STORAGE and OTHER. */
  public static byte[][] fields(int slot) {
    byte[][] out = new byte[NAMES.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = (slot + ":" + NAMES.get(i)).getBytes(StandardCharsets.US_ASCII);
    }
    return out;
  }

  /** The counts from the values of {@link #fields}, in their order (null counting 0). */
  public static SlotCounts decode(List<byte[]> values) {
    return new SlotCounts(
        Bytes.decimal(values.get(0)),
        Bytes.decimal(values.get(1)),
        Bytes.decimal(values.get(2)),
        Bytes.decimal(values.get(3)),
        Bytes.decimal(values.get(4)));
  }
}
