package io.kvindex.index.redis;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * The segment and span fields of a group past which it holds blocks stored under a parent it did
 * not know (apply.lua's unlocated heads): a prompt with one of these fields reaches, located, a
 * block under which unlocated ones hang, which its segments would miss, so its lookup reads block
 * fields. Immutable and thread-safe.
 */
final class UnlocatedHeads {
  /** No head: every prompt may be read by segments. */
  static final UnlocatedHeads NONE = new UnlocatedHeads(new byte[0], Set.of(), false);

  /** What apply.lua writes once it lists more heads than it keeps: every prompt reads blocks. */
  private static final byte ALL = '*';

  private final byte[] value;
  private final Set<ByteBuffer> fields;
  private final boolean all;

  private UnlocatedHeads(byte[] value, Set<ByteBuffer> fields, boolean all) {
    this.value = value;
    this.fields = fields;
    this.all = all;
  }

  /** The heads a read of {@link KeySchema#UNLOCATED_HEADS_FIELD} found (null: none). */
  static UnlocatedHeads of(byte[] value) {
    if (value == null || value.length == 0) {
      return NONE;
    }
    if (value.length == 1 && value[0] == ALL) {
      return new UnlocatedHeads(value, Set.of(), true);
    }
    Set<ByteBuffer> fields = new HashSet<>();
    int n = KeySchema.SEGMENT_FIELD_BYTES;
    for (int at = 0; at + n <= value.length; at += n) {
      fields.add(ByteBuffer.wrap(Arrays.copyOfRange(value, at, at + n)));
    }
    return new UnlocatedHeads(value, Set.copyOf(fields), false);
  }

  /** Whether these are the heads {@code value} (a read of the field; null: none) stands for. */
  boolean readAs(byte[] value) {
    return value == null ? this.value.length == 0 : Arrays.equals(this.value, value);
  }

  /** Whether a lookup of the prompt must read block fields. */
  boolean touches(Prompt prompt) {
    if (all) {
      return true;
    }
    if (fields.isEmpty()) {
      return false;
    }
    for (int k = 0; k < prompt.segments(); k++) {
      if (fields.contains(ByteBuffer.wrap(prompt.segmentField(k)))) {
        return true;
      }
    }
    return false;
  }
}
