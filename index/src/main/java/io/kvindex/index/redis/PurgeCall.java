package io.kvindex.index.redis;

import io.kvindex.index.Lease;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.StreamId;

/**
 * purge.lua's call: drops the stream's entries (and its watermark, under {@link
 * PurgeMode#RESET_WATERMARK}).
 *
 * @param epoch the epoch the caller knows (empty for none)
 */
record PurgeCall(StreamId stream, Lease lease, PurgeMode mode, byte[] epoch)
    implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    int g = keys.groupOf(stream.model(), stream.pod());
    byte[] podField = HashFields.podField(stream.model(), stream.pod());
    return ScriptCall.of(Scripts.PURGE)
        .key("meta", keys.meta(g))
        .key("streams", keys.streams(g))
        .key("pods", keys.pods(g))
        .key("dead", keys.dead(g))
        .key("lease", keys.lease(stream))
        .key("tmap", keys.tokenMap(stream))
        .key("blocks", keys.blocks(g))
        .key("activity", keys.activity(g))
        .arg("stream_field", HashFields.streamField(stream))
        .arg("pod_field", podField)
        .arg("rank", HashFields.rank(stream.dpRank()))
        .arg("lease", lease.toString())
        .arg("reset_watermark", mode == PurgeMode.RESET_WATERMARK ? 1 : 0)
        .arg("holder_field", HashFields.holderField(podField))
        .arg("epoch", epoch)
        .build();
  }
}
