package io.kvindex.index.redis;

import io.kvindex.index.StreamId;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * Key names of one index, and the fixed fields of its hashes: the only place that knows them (the
 * fields built from names and block keys are {@link HashFields}'s). Every key is {@code
 * kvindex:v1:{<index>/<tag>}:<name>} with the index name percent-encoded, where the tag is an index
 * group's number (all keys of a group share one hash slot) or {@code ingesters} for the replica
 * registry. External names only ever appear length-prefixed inside hash fields, or as a digest in
 * key names. Immutable and thread-safe.
 */
public final class KeySchema {
  /** The start of every key of every index: the layout's version is part of it. */
  private static final String ROOT = "kvindex:v1:{";

  /** Bytes in a block field: model scope (8), cache group (2), block key (8). */
  static final int BLOCK_FIELD_BYTES = 18;

  /**
   * The field of a group's blocks hash counting (decimal, HINCRBY) the changes to which slots any
   * pod record of the group lists: routers trust cached pod records while it stands still. Not 18
   * bytes long, so never a block field.
   */
  static final byte[] SLOTS_GENERATION_FIELD =
      "kvindex/slots-generation".getBytes(StandardCharsets.US_ASCII);

  /**
   * The field of a group's blocks hash counting (decimal, HINCRBY) block fields whose chain
   * position is unknown (stored with a parent the index did not know), for inspection; lookups read
   * {@link #UNLOCATED_HEADS_FIELD}. Not 18 or 20 bytes long, so never a block or segment field.
   */
  public static final byte[] UNLOCATED_FIELD =
      "kvindex/unlocated".getBytes(StandardCharsets.US_ASCII);

  /**
   * The field of a group's blocks hash listing its unlocated heads (apply.lua): the segment and
   * span fields (20 bytes each, concatenated) past which it holds unlocated blocks, or {@code *}
   * for every one; absent while none. Lookups whose prompt has one read block fields.
   */
  static final byte[] UNLOCATED_HEADS_FIELD =
      "kvindex/unlocated-heads".getBytes(StandardCharsets.US_ASCII);

  /**
   * The field of a group's blocks hash holding the group's epoch (a copy of meta's, made by
   * init.lua): lookups read it with the blocks, and a change means Redis lost the index.
   */
  static final byte[] EPOCH_FIELD = "kvindex/epoch".getBytes(StandardCharsets.US_ASCII);

  /**
   * The version of what this code's scripts store under the v1 key layout, recorded in a group's
   * meta ({@code version}) when init.lua creates the group: 2 since the per-slot block counts and
   * the stream activity. A group without it was created by an earlier version, whose scripts kept
   * no counts, so its counts are not exact.
   */
  static final int STORED_VERSION = 2;

  /**
   * Blocks one segment covers below {@link #SPAN_FROM}: a chain's blocks from a multiple of this,
   * keyed by the first.
   */
  static final int SEGMENT_BLOCKS = 16;

  /** The chain position from which blocks are kept in spans instead of 16-block segments. */
  static final int SPAN_FROM = 256;

  /** Blocks one span covers: a chain's blocks from a multiple of this, keyed by the first. */
  static final int SPAN_BLOCKS = 256;

  /** Bytes in a segment or span field: its head's block field, then {@code /s} or {@code /S}. */
  static final int SEGMENT_FIELD_BYTES = BLOCK_FIELD_BYTES + 2;

  /**
   * The start of every holder-record field of a blocks hash (see {@link HashFields#holderField}).
   */
  static final byte[] HOLDER_PREFIX = "kvindex/holders/".getBytes(StandardCharsets.US_ASCII);

  private static final HexFormat HEX = HexFormat.of();

  private final String encodedIndex;
  private final int groups;

  /** The keys of index {@code indexName} spread over {@code groups} index groups. */
  public KeySchema(String indexName, int groups) {
    this.encodedIndex = encode(indexName);
    this.groups = groups;
  }

  int groups() {
    return groups;
  }

  /**
   * A SCAN {@code MATCH} pattern for every key of index {@code indexName} (its groups and its
   * replica registry), for tools that delete an index.
   */
  public static String keyPattern(String indexName) {
    return ROOT + encode(indexName) + "/*";
  }

  /** The start of every key of index {@code indexName}. */
  public static String keyPrefix(String indexName) {
    return ROOT + encode(indexName) + "/";
  }

  /** Keeps {@code [A-Za-z0-9._-]}; every other UTF-8 byte becomes {@code %XX}. */
  static String encode(String name) {
    StringBuilder out = new StringBuilder(name.length());
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'A' && c <= 'Z')
          || (c >= 'a' && c <= 'z')
          || (c >= '0' && c <= '9')
          || c == '.'
          || c == '_'
          || c == '-') {
        out.append((char) c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)));
        out.append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
      }
    }
    return out.toString();
  }

  /** The group of a pod: SHA-256 of its field, first 4 bytes unsigned, modulo the group count. */
  public int groupOf(String model, String pod) {
    byte[] digest = sha256(HashFields.podField(model, pod));
    long value = ByteBuffer.wrap(digest, 0, 4).getInt() & 0xFFFFFFFFL;
    return (int) (value % groups);
  }

  private byte[] key(String tag, String name) {
    return (ROOT + encodedIndex + "/" + tag + "}:" + name).getBytes(StandardCharsets.UTF_8);
  }

  public byte[] key(int group, String name) {
    return key(Integer.toString(group), name);
  }

  /** The sorted set of live ingester replicas (member: replica, score: expiry ms). */
  public byte[] replicas() {
    return key("ingesters", "replicas");
  }

  /**
   * How many stream leases the replicas have given up (hash: {@code count} -> decimal), watched by
   * a replica short of its share to take one at once.
   */
  byte[] leaseReleases() {
    return key("ingesters", "releases");
  }

  /**
   * Which process holds each live replica name (hash: replica -> {@code <process>|<expiry ms>}).
   */
  byte[] replicaProcesses() {
    return key("ingesters", "replica-processes");
  }

  /**
   * The load every router of a fleet shares for {@code model} (hash: {@code router} -> {@code u64
   * expiry ms} then per pod {@code u32 length ‖ pod ‖ u64 requests ‖ u64 queued tokens}), under a
   * tag of its own per model, {@code load-} and the hex of the first 8 bytes of SHA-256 of the
   * model's name: a {@code spec:} key, which a router's Redis user may write.
   */
  public byte[] sharedLoad(String model) {
    byte[] digest = sha256(model.getBytes(StandardCharsets.UTF_8));
    return key("load-" + HEX.formatHex(digest, 0, 8), "spec:load");
  }

  /**
   * The engine incarnation (its process start time) a stream's entries came from, as its owners
   * confirmed it (incarnation.lua).
   */
  byte[] incarnation(StreamId stream) {
    return key(groupOf(stream.model(), stream.pod()), "incarnation:" + streamDigest(stream));
  }

  public byte[] meta(int group) {
    return key(group, "meta");
  }

  public byte[] streams(int group) {
    return key(group, "streams");
  }

  public byte[] pods(int group) {
    return key(group, "pods");
  }

  byte[] blocks(int group) {
    return key(group, "blocks");
  }

  public byte[] free(int group) {
    return key(group, "free");
  }

  public byte[] dead(int group) {
    return key(group, "dead");
  }

  /**
   * The block counts of a group's holder slots ({@link SlotCounts}), kept by every script that adds
   * or strips an entry, so that inspecting a stream never scans the blocks hash.
   */
  public byte[] counts(int group) {
    return key(group, "counts");
  }

  /**
   * Each stream's last applied chunk ({@code a} + stream field -> ms) and last purge ({@code p} +
   * stream field -> {@code <ms>|<slot retired>}), by Redis's clock; forgotten with the stream.
   */
  public byte[] activity(int group) {
    return key(group, "activity");
  }

  /**
   * What routers noted about the models they key ({@link HashFields#keysNote}): a {@code spec:}
   * key, the only kind a router's Redis user may write, in group 0.
   */
  public byte[] readerNotes() {
    return key(0, "spec:models");
  }

  /**
   * What the ingesters' key check last found per model: field the model's name (UTF-8), value a
   * {@link io.kvindex.index.KeyCheckNote}, in group 0. Nothing but inspect and routers that adopt
   * the engines' keys read it.
   */
  public byte[] keyChecks() {
    return key(0, "keychecks");
  }

  /**
   * Each model's cache-group layout as the ingesters learned it from the engines' stores: field the
   * model's name (UTF-8), value a {@link io.kvindex.index.CacheLayout#encode}, in group 0. Routers
   * read it to score hybrid models.
   */
  byte[] cacheLayouts() {
    return key(0, "layouts");
  }

  public byte[] lease(StreamId stream) {
    return key(groupOf(stream.model(), stream.pod()), "lease:" + streamDigest(stream));
  }

  byte[] tokenMap(StreamId stream) {
    return tokenMap(groupOf(stream.model(), stream.pod()), HashFields.streamField(stream));
  }

  /** The token map of the stream whose field (as stored in the streams hash) is given. */
  byte[] tokenMap(int group, byte[] streamField) {
    return key(group, "tmap:" + HEX.formatHex(sha256(streamField), 0, 16));
  }

  /** The blocks hash of a group, for tools that measure it (see {@link #keyPattern}). */
  public byte[] blocksKey(int group) {
    return blocks(group);
  }

  /**
   * The speculative routes of a group (speculate.lua): a hash keyed like the segment and span
   * fields of {@code blocks} (a segment or span head's block field and {@code /s} or {@code /S}),
   * each value the latest routes through that segment or span, one per pod, newest first: the pod's
   * digest ({@link #podDigest}, 8 bytes), the route's deadline (ms, 6 bytes), its blocks in the
   * segment or span (2 bytes, {@code n}) and its keys at every 16th block of them and at its last
   * (8 bytes each, {@code ceil(n / 16)} of them). A lookup reads it with one HMGET of its own
   * segment fields. A {@code spec:} key, which routers may write.
   */
  byte[] speculativeRoutes(int group) {
    return key(group, "spec:routes");
  }

  /** A group's speculative routes ({@link #speculativeRoutes}), for tools that measure them. */
  public byte[] speculativeRoutesKey(int group) {
    return speculativeRoutes(group);
  }

  /**
   * The order of a group's speculative routes (speculate.lua): a sorted set of the fields of {@link
   * #speculativeRoutes}, each scored by the latest deadline of its routes, so that expired fields
   * and, past the limit, the oldest go first.
   */
  public byte[] speculativeOrder(int group) {
    return key(group, "spec:order");
  }

  /**
   * A pod's digest in its group's speculative routes: the first 8 bytes of SHA-256 of its field,
   * big-endian.
   */
  static long podDigest(byte[] podField) {
    return ByteBuffer.wrap(sha256(podField)).getLong();
  }

  /**
   * A pod's resync request (resync.lua): a hash of its note and the ranks whose owners took it,
   * expiring with the request's interval, so one stands per pod per interval.
   */
  byte[] resync(String model, String pod) {
    return podKey(model, pod, "resync:");
  }

  /**
   * A pod's mark that its evictions are inferred (infer.lua): the engine's capacity in blocks
   * (decimal), with PX, refreshed by the owners of the pod's streams while they infer.
   */
  public byte[] inferred(String model, String pod) {
    return podKey(model, pod, "infer:");
  }

  /**
   * The blocks of observed requests on a pod whose evictions are inferred (infer.lua): a stream of
   * entries {@code r} → rank (decimal), {@code k} → block keys (8 bytes each, big-endian), {@code
   * e} → the prediction's error, {@code c} → the blocks the engine reported cached, {@code t} →
   * when it was recorded (Redis's clock, ms), each with the id {@code <offset>-<size>} in bytes;
   * capped in bytes, trimmed to what its readers have read, and expiring after its last entry.
   */
  byte[] touches(String model, String pod) {
    return podKey(model, pod, "touch:");
  }

  /** A pod's touches ({@link #touches}), for tools that measure them. */
  public byte[] touchesKey(String model, String pod) {
    return touches(model, pod);
  }

  /**
   * The state of a pod's touches (infer.lua): {@code o} → the bytes of touches ever added (the
   * offset of the next), {@code l} → the latest touch's entry id, {@code i} → the ids of the latest
   * 16 touches (8 bytes each, newest first: a touch retried after a lost reply is added once),
   * {@code c<rank>} → each reader's cursor and the time of its last read. A {@code touch:} key,
   * which routers may write, expiring with the touches or the last read.
   */
  byte[] touchState(String model, String pod) {
    byte[] stream = touches(model, pod);
    byte[] key = Arrays.copyOf(stream, stream.length + 2);
    key[stream.length] = '/';
    key[stream.length + 1] = 'o';
    return key;
  }

  /**
   * How far each of a pod's streams is behind its engine, as their owners report it (lag.lua): a
   * hash of rank (decimal) → {@code <ms>|<lag ms>}, expiring a while after the last report.
   */
  byte[] lag(String model, String pod) {
    return podKey(model, pod, "lag:");
  }

  /**
   * What the owner of a stream whose evictions are inferred leaves for its next owner (infer.lua):
   * {@code <size>|} then the removals not applied, 8 bytes each, big-endian; with PX.
   */
  byte[] handover(StreamId stream) {
    return key(groupOf(stream.model(), stream.pod()), "handover:" + streamDigest(stream));
  }

  private byte[] podKey(String model, String pod, String kind) {
    byte[] digest = sha256(HashFields.podField(model, pod));
    return key(groupOf(model, pod), kind + HEX.formatHex(digest, 0, 16));
  }

  /** Hex of the first 16 bytes of SHA-256 of the stream field. */
  static String streamDigest(StreamId stream) {
    return HEX.formatHex(sha256(HashFields.streamField(stream)), 0, 16);
  }

  static byte[] sha256(byte[] input) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(input);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime must provide SHA-256", e);
    }
  }
}
