package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.StreamId;
import java.util.List;

/**
 * apply.lua's call: one chunk of a stream's batches {@code firstSeq..seq}, applied as one. A call's
 * chunks share everything but the epoch (read as each is sent), the chunk's blocks and its events.
 *
 * @param callBlocks the blocks of the whole call, all its chunks
 * @param digest the digest of the whole call's events (hex)
 * @param epoch the epoch the caller knows (empty for none)
 * @param from the chunk's first block in the call (from 0)
 * @param to the block after the chunk's last
 * @param events the chunk's events, packed (see {@link EventPacker})
 */
record ApplyCall(
    StreamId stream,
    KeyMode mode,
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
        stream,
        mode,
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
  public ScriptCall on(KeySchema keys) {
    int g = keys.groupOf(stream.model(), stream.pod());
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    return ScriptCall.of(Scripts.APPLY)
        .key("meta", keys.meta(g))
        .key("streams", keys.streams(g))
        .key("pods", keys.pods(g))
        .key("blocks", keys.blocks(g))
        .key("free", keys.free(g))
        .key("dead", keys.dead(g))
        .key("lease", keys.lease(stream))
        .key("tmap", keys.tokenMap(stream))
        .key("counts", keys.counts(g))
        .key("activity", keys.activity(g))
        .arg("stream_field", KeySchema.streamField(stream))
        .arg("pod_field", podField)
        .arg("rank", KeySchema.rank(stream.dpRank()))
        .arg("seq", seq)
        .arg("lease", lease.toString())
        .arg("pod_ttl_ms", podTtlMs)
        .arg("scope", KeySchema.scope(mode, stream.model()))
        .arg("holder_field", KeySchema.holderField(podField))
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
