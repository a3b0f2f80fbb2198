package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The fields within the index's hashes that are built from names and block keys: pod, holder and
 * stream fields, block and segment fields, the activity hash's fields, and the writers' and
 * routers' notes. {@link KeySchema} names the keys they are fields of. Thread-safe (stateless).
 */
public final class HashFields {
  private HashFields() {}

  /** The field of a stream's last apply in its group's activity hash. */
  public static byte[] appliedField(byte[] streamField) {
    return prefixed((byte) 'a', streamField);
  }

  /** The field of a stream's last purge in its group's activity hash. */
  public static byte[] purgedField(byte[] streamField) {
    return prefixed((byte) 'p', streamField);
  }

  /** The field of the time a stream last took a resync, in its group's activity hash. */
  static byte[] resyncedField(byte[] streamField) {
    return prefixed((byte) 'r', streamField);
  }

  private static byte[] prefixed(byte kind, byte[] field) {
    return ByteBuffer.allocate(1 + field.length).put(kind).put(field).array();
  }

  /** Every note field (a group's meta, the routers' notes) starts with this. */
  public static final String NOTE = "note:";

  /** A writer's note in a group's meta: it applies {@code model}'s batches in {@code mode}. */
  static byte[] modeNote(KeyMode mode, String model) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ascii(NOTE + "mode:" + mode.name().toLowerCase(java.util.Locale.ROOT) + ":"));
    lengthPrefixed(out, model);
    return out.toByteArray();
  }

  /** A writer's note in a group's meta: it applies with this segment limit. */
  static byte[] segmentSlotsNote(int segmentSlots) {
    return ascii(NOTE + "segment-slots:" + segmentSlots);
  }

  /**
   * A router's note: it keys {@code model}'s prompts with {@code keys} (the command line's form,
   * {@code engine:<algorithm>:<seed>:<block size>} or {@code token:<block size>}); model {@code ""}
   * for every model it has no keys of its own for.
   */
  static byte[] keysNote(String keys, String model) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ascii(NOTE + "keys:"));
    lengthPrefixed(out, keys);
    lengthPrefixed(out, model);
    return out.toByteArray();
  }

  /**
   * A router's note ({@link #keysNote}) read back: {keys, model}, or null when {@code field} is
   * another kind of note.
   */
  static String[] readKeysNote(byte[] field) {
    byte[] prefix = ascii(NOTE + "keys:");
    if (field.length < prefix.length + 8
        || !Arrays.equals(field, 0, prefix.length, prefix, 0, prefix.length)) {
      return null;
    }
    ByteBuffer in = ByteBuffer.wrap(field, prefix.length, field.length - prefix.length);
    String keys = lengthPrefixed(in);
    String model = lengthPrefixed(in);
    return new String[] {keys, model};
  }

  private static String lengthPrefixed(ByteBuffer in) {
    byte[] utf8 = new byte[in.getInt()];
    in.get(utf8);
    return new String(utf8, StandardCharsets.UTF_8);
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /** {@code u32 len | model | u32 len | pod} in UTF-8. */
  static byte[] podField(String model, String pod) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    lengthPrefixed(out, model);
    lengthPrefixed(out, pod);
    return out.toByteArray();
  }

  /**
   * The field of a group's blocks hash holding a copy of a pod's record, so that one HMGET reads
   * holders and blocks atomically. At least 26 bytes long, so never a block field.
   */
  static byte[] holderField(byte[] podField) {
    byte[] out =
        Arrays.copyOf(KeySchema.HOLDER_PREFIX, KeySchema.HOLDER_PREFIX.length + podField.length);
    System.arraycopy(podField, 0, out, KeySchema.HOLDER_PREFIX.length, podField.length);
    return out;
  }

  /** The start of every pod field of {@code model}: {@code u32 len | model}. */
  static byte[] modelPrefix(String model) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    lengthPrefixed(out, model);
    return out.toByteArray();
  }

  /** The pod name of a pod field that starts with {@code modelPrefix}. */
  static String podOf(byte[] podField, int modelPrefixLength) {
    int at = modelPrefixLength + 4;
    return new String(podField, at, podField.length - at, StandardCharsets.UTF_8);
  }

  /** The pod field followed by the rank as 4 bytes. */
  static byte[] streamField(StreamId stream) {
    byte[] pod = podField(stream.model(), stream.pod());
    return ByteBuffer.allocate(pod.length + 4).put(pod).putInt(stream.dpRank()).array();
  }

  /** The rank as 2 bytes, as it appears in a pod record. */
  static byte[] rank(int dpRank) {
    return new byte[] {(byte) (dpRank >>> 8), (byte) dpRank};
  }

  /** 8 bytes: the first 8 of SHA-256 over a domain, the key mode and the model. */
  static byte[] scope(KeyMode mode, String model) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes("kvindex/scope/v1".getBytes(StandardCharsets.US_ASCII));
    out.write(mode.ordinal());
    lengthPrefixed(out, model);
    byte[] digest = KeySchema.sha256(out.toByteArray());
    byte[] scope = new byte[8];
    System.arraycopy(digest, 0, scope, 0, 8);
    return scope;
  }

  /** The 10-byte prefix of a block field: scope then cache group. */
  static byte[] fieldPrefix(byte[] scope, int cacheGroup) {
    return ByteBuffer.allocate(10).put(scope).putShort((short) cacheGroup).array();
  }

  static byte[] blockField(byte[] prefix, long blockKey) {
    return withKey(new byte[KeySchema.BLOCK_FIELD_BYTES], prefix, blockKey);
  }

  /**
   * The field of the chain segment whose first block is {@code headKey}: a 16-block segment, or a
   * span when the head's position is {@link KeySchema#SPAN_FROM} or later.
   */
  static byte[] segmentField(byte[] prefix, long headKey, boolean span) {
    byte[] field = withKey(new byte[KeySchema.SEGMENT_FIELD_BYTES], prefix, headKey);
    field[KeySchema.BLOCK_FIELD_BYTES] = '/';
    field[KeySchema.BLOCK_FIELD_BYTES + 1] = (byte) (span ? 'S' : 's');
    return field;
  }

  /** The field prefix then the key, big-endian, at the front of {@code field}. */
  private static byte[] withKey(byte[] field, byte[] prefix, long key) {
    System.arraycopy(prefix, 0, field, 0, prefix.length);
    for (int b = 0; b < 8; b++) {
      field[prefix.length + b] = (byte) (key >>> (56 - 8 * b));
    }
    return field;
  }

  private static void lengthPrefixed(ByteArrayOutputStream out, String value) {
    byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
    out.writeBytes(ByteBuffer.allocate(4).putInt(utf8.length).array());
    out.writeBytes(utf8);
  }
}
