package io.kvindex.index.redis;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A pod record, the value of a pod's field in its group's pods hash (and of its copy in the blocks
 * hash, under the pod's holder field): the pod's liveness deadline (ms, Redis's clock, 8 bytes
 * big-endian), then one (slot u16, rank u16) pair, big-endian, per stream of the pod whose entries
 * lookups see. The scripts read and write it with the Lua library {@code pod_record.lua}; this is
 * its one Java definition (PodRecordFormatTest holds the two to the same bytes). Immutable;
 * thread-safe.
 *
 * @param deadlineMs the liveness deadline, Redis's clock
 * @param holdings the streams' (slot, rank) pairs, in the record's order
 */
public record PodRecord(long deadlineMs, List<Holding> holdings) {
  /** Bytes of the deadline at a record's head. */
  static final int DEADLINE_BYTES = 8;

  /** Bytes of one (slot, rank) pair. */
  static final int PAIR_BYTES = 4;

  /** A stream's holder slot, and its rank. */
  public record Holding(int slot, int rank) {}

  public PodRecord {
    holdings = List.copyOf(holdings);
  }

  /** The record's bytes. */
  public byte[] encode() {
    ByteBuffer out = ByteBuffer.allocate(DEADLINE_BYTES + PAIR_BYTES * holdings.size());
    out.putLong(deadlineMs);
    for (Holding h : holdings) {
      out.putShort((short) h.slot()).putShort((short) h.rank());
    }
    return out.array();
  }

  /** The record in {@code value}, or null for none or one cut short of its deadline. */
  public static PodRecord decode(byte[] value) {
    if (value == null || value.length < DEADLINE_BYTES) {
      return null;
    }
    List<Holding> holdings = new ArrayList<>();
    for (int k = DEADLINE_BYTES; k + PAIR_BYTES <= value.length; k += PAIR_BYTES) {
      holdings.add(new Holding(slotAt(value, k), rankAt(value, k)));
    }
    return new PodRecord(deadline(value), holdings);
  }

  /** The deadline at the head of a record of at least {@value #DEADLINE_BYTES} bytes. */
  public static long deadline(byte[] value) {
    return Bytes.longAt(value, 0);
  }

  /** The deadline, or null for no record or one cut short of it. */
  public static Long deadlineOrNull(byte[] value) {
    return value != null && value.length >= DEADLINE_BYTES ? deadline(value) : null;
  }

  /** Whether a record lists no slot: lookups see none of the pod's entries. */
  static boolean listsNoSlot(byte[] value) {
    return value.length <= DEADLINE_BYTES;
  }

  /** Whether the record lists (slot, rank): lookups see the slot's entries only then. */
  public static boolean lists(byte[] value, int slot, int rank) {
    for (int k = DEADLINE_BYTES; value != null && k + PAIR_BYTES <= value.length; k += PAIR_BYTES) {
      if (slotAt(value, k) == slot && rankAt(value, k) == rank) {
        return true;
      }
    }
    return false;
  }

  /** The slot of the pair at byte {@code k}. */
  static int slotAt(byte[] value, int k) {
    return ((value[k] & 0xff) << 8) | (value[k + 1] & 0xff);
  }

  /** The rank of the pair at byte {@code k}. */
  static int rankAt(byte[] value, int k) {
    return ((value[k + 2] & 0xff) << 8) | (value[k + 3] & 0xff);
  }
}
