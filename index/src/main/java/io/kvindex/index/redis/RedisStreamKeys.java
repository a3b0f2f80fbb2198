package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import io.kvindex.index.StreamId;
import io.kvindex.index.StreamWrites;

/**
 * What apply.lua's call names of one stream besides its batches: its group's keys, its lease and
 * token-map keys, its fields and its scope, derived once (four SHA-256s and a dozen key names) for
 * a writer that applies many batches. Immutable (its arrays are never written after construction);
 * thread-safe.
 */
final class RedisStreamKeys implements StreamWrites.Keys {
  private final KeySchema schema;
  private final StreamId stream;
  private final KeyMode mode;
  final int group;
  final byte[] meta;
  final byte[] streams;
  final byte[] pods;
  final byte[] blocks;
  final byte[] free;
  final byte[] dead;
  final byte[] lease;
  final byte[] tokenMap;
  final byte[] counts;
  final byte[] activity;
  final byte[] streamField;
  final byte[] podField;
  final byte[] rank;
  final byte[] scope;
  final byte[] holderField;

  private RedisStreamKeys(KeySchema schema, StreamId stream, KeyMode mode) {
    this.schema = schema;
    this.stream = stream;
    this.mode = mode;
    this.group = schema.groupOf(stream.model(), stream.pod());
    this.meta = schema.meta(group);
    this.streams = schema.streams(group);
    this.pods = schema.pods(group);
    this.blocks = schema.blocks(group);
    this.free = schema.free(group);
    this.dead = schema.dead(group);
    this.lease = schema.lease(stream);
    this.tokenMap = schema.tokenMap(stream);
    this.counts = schema.counts(group);
    this.activity = schema.activity(group);
    this.streamField = HashFields.streamField(stream);
    this.podField = HashFields.podField(stream.model(), stream.pod());
    this.rank = HashFields.rank(stream.dpRank());
    this.scope = HashFields.scope(mode, stream.model());
    this.holderField = HashFields.holderField(podField);
  }

  /** The keys of {@code stream} in the index {@code schema} lays out. */
  static RedisStreamKeys of(KeySchema schema, StreamId stream, KeyMode mode) {
    return new RedisStreamKeys(schema, stream, mode);
  }

  /**
   * {@code keys} as derived for {@code schema}: themselves when they were, derived again if not.
   */
  static RedisStreamKeys in(KeySchema schema, StreamWrites.Keys keys) {
    return keys instanceof RedisStreamKeys k && k.schema == schema
        ? k
        : new RedisStreamKeys(schema, keys.stream(), keys.mode());
  }

  @Override
  public StreamId stream() {
    return stream;
  }

  @Override
  public KeyMode mode() {
    return mode;
  }
}
