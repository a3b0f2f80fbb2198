package io.kvindex.index.redis;

import java.util.ArrayList;
import java.util.List;

/**
 * A looked-up prompt's keys, with its block and segment fields made on first use and shared by
 * every read of one lookup. Its segments, in the order a segment read asks for them: 16 blocks each
 * up to {@link KeySchema#SPAN_FROM}, 256 (spans) from there on, the prompt's first key being the
 * chain's block 0. Thread-safe: the fields are made under the instance's lock.
 */
final class Prompt {
  private final byte[] prefix;
  private final long[] keys;
  private static final int SHORT_SEGMENTS = KeySchema.SPAN_FROM / KeySchema.SEGMENT_BLOCKS;

  private final int segmentCount;

  /** The segment fields, made together on first use (a segment read needs every one). */
  private volatile byte[][] segmentFields;

  private List<byte[]> blockFields;
  private volatile boolean byBlockFields;

  /**
   * @param prefix the block-field prefix (scope and cache group)
   * @param keys the prompt's block keys, in chain order (read, never changed)
   */
  Prompt(byte[] prefix, long[] keys) {
    this.prefix = prefix;
    this.keys = keys;
    this.segmentCount = segmentCount(keys.length);
  }

  int length() {
    return keys.length;
  }

  long[] keys() {
    return keys;
  }

  /**
   * Whether the keys were found to start past the chain's block 0: they are read by block fields.
   */
  boolean byBlockFields() {
    return byBlockFields;
  }

  void readByBlockFields() {
    byBlockFields = true;
  }

  int segments() {
    return segmentCount;
  }

  int segmentStart(int k) {
    return k <= SHORT_SEGMENTS
        ? k * KeySchema.SEGMENT_BLOCKS
        : KeySchema.SPAN_FROM + (k - SHORT_SEGMENTS) * KeySchema.SPAN_BLOCKS;
  }

  int segmentEnd(int k) {
    return Math.min(keys.length, segmentStart(k + 1));
  }

  byte[] segmentField(int k) {
    byte[][] fields = segmentFields;
    return (fields != null ? fields : makeSegmentFields())[k];
  }

  private synchronized byte[][] makeSegmentFields() {
    if (segmentFields == null) {
      byte[][] fields = new byte[segmentCount][];
      for (int k = 0; k < fields.length; k++) {
        fields[k] = HashFields.segmentField(prefix, keys[segmentStart(k)], k >= SHORT_SEGMENTS);
      }
      segmentFields = fields;
    }
    return segmentFields;
  }

  /** The segments (and spans) a chain's first {@code length} blocks lie in. */
  static int segmentCount(int length) {
    if (length <= KeySchema.SPAN_FROM) {
      return (length + KeySchema.SEGMENT_BLOCKS - 1) / KeySchema.SEGMENT_BLOCKS;
    }
    int beyond = length - KeySchema.SPAN_FROM;
    return SHORT_SEGMENTS + (beyond + KeySchema.SPAN_BLOCKS - 1) / KeySchema.SPAN_BLOCKS;
  }

  /** The first key's block field, without making the others (a segment read needs only it). */
  byte[] firstBlockField() {
    return HashFields.blockField(prefix, keys[0]);
  }

  synchronized List<byte[]> blockFields() {
    if (blockFields == null) {
      List<byte[]> fields = new ArrayList<>(keys.length);
      for (long key : keys) {
        fields.add(HashFields.blockField(prefix, key));
      }
      blockFields = fields;
    }
    return blockFields;
  }
}
