package io.kvindex.index.redis;

import java.nio.charset.StandardCharsets;

/**
 * A stream record, the value of a stream's field in its group's streams hash: {@code
 * <slot>|<watermark>} (the slot 0 for none, the watermark empty for none), then {@code
 * |<seq>:<blocks done>:<digest>[:x]} while a call of several chunks is half applied (its first seq,
 * the blocks of the call done, the digest of its events, and {@code :x} when the blocks done ended
 * in a dropped token store), or {@code |s} for a staged rebuild that holds no slot yet (its history
 * so far stored nothing). The scripts read and write it with the Lua library {@code
 * stream_record.lua}; this is its one Java definition (StreamRecordFormatTest holds the two to the
 * same bytes). Immutable; thread-safe.
 *
 * @param watermark the last seq applied, null for none
 * @param inProgress the call half applied, null for none
 * @param stagedEmpty a staged rebuild that holds no slot yet
 */
public record StreamRecord(int slot, Long watermark, InProgress inProgress, boolean stagedEmpty) {

  /**
   * A call of several chunks, half applied.
   *
   * @param seq the call's first seq
   * @param blocksDone the blocks of the call applied
   * @param digest the digest of the call's events (hex)
   * @param tailDropped whether the blocks done ended in a dropped token store
   */
  public record InProgress(long seq, long blocksDone, String digest, boolean tailDropped) {
    @Override
    public String toString() {
      return seq + ":" + blocksDone + ":" + digest + (tailDropped ? ":x" : "");
    }
  }

  public StreamRecord {
    if (inProgress != null && stagedEmpty) {
      throw new IllegalArgumentException("a stream record is half applied or staged, not both");
    }
  }

  /** The record as stored. */
  public String encode() {
    String rec = slot + "|" + (watermark == null ? "" : watermark.toString());
    if (inProgress != null) {
      return rec + "|" + inProgress;
    }
    return stagedEmpty ? rec + "|s" : rec;
  }

  /** The record in {@code value}, or null for none. */
  public static StreamRecord decode(byte[] value) {
    return value == null ? null : decode(new String(value, StandardCharsets.US_ASCII));
  }

  /**
   * The record in {@code value}.
   *
   * @throws IllegalArgumentException if it is not a stream record
   */
  public static StreamRecord decode(String value) {
    String[] parts = value.split("\\|", 3);
    try {
      int slot = Integer.parseInt(parts[0]);
      Long watermark = parts.length > 1 && !parts[1].isEmpty() ? Long.valueOf(parts[1]) : null;
      if (parts.length < 3) {
        return new StreamRecord(slot, watermark, null, false);
      }
      if (parts[2].equals("s")) {
        return new StreamRecord(slot, watermark, null, true);
      }
      String[] call = parts[2].split(":", -1);
      boolean tail = call.length == 4 && call[3].equals("x");
      if (call.length != 3 && !tail) {
        throw new IllegalArgumentException("not a call in progress: " + parts[2]);
      }
      return new StreamRecord(
          slot,
          watermark,
          new InProgress(Long.parseLong(call[0]), Long.parseLong(call[1]), call[2], tail),
          false);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a stream record: '" + value + "'", e);
    }
  }
}
