package io.kvindex.index.redis;

import java.util.ArrayList;
import java.util.List;

/**
 * A looked-up prompt's keys, with its block and segment fields made on first use and shared by
 * every read of one lookup. Thread-safe: the fields are made under the instance's lock.
 */
final class Prompt {
  private final byte[] prefix;
  private final long[] keys;
  private final byte[][] segmentFields;
  private List<byte[]> blockFields;
  private volatile boolean byBlockFields;

  /**
   * @param prefix the block-field prefix (scope and cache group)
   * @param keys the prompt's block keys, in chain order (read, never changed)
   */
  Prompt(byte[] prefix, long[] keys) {
    this.prefix = prefix;
    this.keys = keys;
    this.segmentFields =
        new byte[(keys.length + KeySchema.SEGMENT_BLOCKS - 1) / KeySchema.SEGMENT_BLOCKS][];
  }

  int length() {
    return keys.length;
  }

  long[] keys() {
    return keys;
  }

  /** Whether the keys were found to start inside a segment: they are read by block fields. */
  boolean byBlockFields() {
    return byBlockFields;
  }

  void readByBlockFields() {
    byBlockFields = true;
  }

  int segments() {
    return segmentFields.length;
  }

  int segmentStart(int k) {
    return k * KeySchema.SEGMENT_BLOCKS;
  }

  int segmentEnd(int k) {
    return Math.min(keys.length, (k + 1) * KeySchema.SEGMENT_BLOCKS);
  }

  synchronized byte[] segmentField(int k) {
    if (segmentFields[k] == null) {
      segmentFields[k] = KeySchema.segmentField(prefix, keys[segmentStart(k)]);
    }
    return segmentFields[k];
  }

  /** The first key's block field, without making the others (a segment read needs only it). */
  byte[] firstBlockField() {
    return KeySchema.blockField(prefix, keys[0]);
  }

  synchronized List<byte[]> blockFields() {
    if (blockFields == null) {
      List<byte[]> fields = new ArrayList<>(keys.length);
      for (long key : keys) {
        fields.add(KeySchema.blockField(prefix, key));
      }
      blockFields = fields;
    }
    return blockFields;
  }
}
