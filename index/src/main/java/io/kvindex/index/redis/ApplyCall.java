package io.kvindex.index.redis;

import io.kvindex.index.Lease;
import java.util.List;

/**
 * apply.lua's call: one chunk of a stream's batches {@code firstSeq..seq}, applied as one. A call's
 * chunks share everything but the epoch (read as each is sent), the chunk's blocks and its events.
 *
 * @param keys the stream's keys, derived once per stream
 * @param callBlocks the blocks of the whole call, all its chunks
 * @param digest the digest of the whole call's events (hex)
 * @param epoch the epoch the caller knows (empty for none)
 * @param from the chunk's first block in the call (from 0)
 * @param to the block after the chunk's last
 * @param events the chunk's events, packed (see {@link EventPacker})
 */
record ApplyCall(
    RedisStreamKeys keys,
    long firstSeq,
    long seq,
    Lease lease,
    long podTtlMs,
    int segmentSlots,
    boolean staged,
    long callBlocks,
    String digest,
    byte[] epoch,
    long from,
    long to,
    List<byte[]> events)
    implements ScriptCall.Source {

  /** The same call's chunk {@code from..to} with {@code events}, under {@code epoch}. */
  ApplyCall chunk(byte[] epoch, long from, long to, List<byte[]> events) {
    return new ApplyCall(
        keys,
        firstSeq,
        seq,
        lease,
        podTtlMs,
        segmentSlots,
        staged,
        callBlocks,
        digest,
        epoch,
        from,
        to,
        events);
  }

  @Override
  public ScriptCall on(KeySchema schema) {
    RedisStreamKeys k = RedisStreamKeys.in(schema, keys);
    return ScriptCall.of(Scripts.APPLY)
        .key("meta", k.meta)
        .key("streams", k.streams)
        .key("pods", k.pods)
        .key("blocks", k.blocks)
        .key("free", k.free)
        .key("dead", k.dead)
        .key("lease", k.lease)
        .key("tmap", k.tokenMap)
        .key("counts", k.counts)
        .key("activity", k.activity)
        .arg("stream_field", k.streamField)
        .arg("pod_field", k.podField)
        .arg("rank", k.rank)
        .arg("seq", seq)
        .arg("lease", lease.toString())
        .arg("pod_ttl_ms", podTtlMs)
        .arg("scope", k.scope)
        .arg("holder_field", k.holderField)
        .arg("segment_slots", segmentSlots)
        .arg("epoch", epoch)
        .arg("from", from)
        .arg("to", to)
        .arg("staged", staged ? 1 : 0)
        .arg("first_seq", firstSeq)
        .arg("call_blocks", callBlocks)
        .arg("digest", Bytes.ascii(digest))
        .rest("events", events)
        .build();
  }
}
