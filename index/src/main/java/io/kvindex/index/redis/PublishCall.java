package io.kvindex.index.redis;

import io.kvindex.index.Lease;
import io.kvindex.index.StreamId;

/**
 * publish.lua's call: ends a staged rebuild of the stream (its pod record lists its slot again).
 *
 * @param epoch the epoch the caller knows (empty for none)
 */
record PublishCall(StreamId stream, Lease lease, byte[] epoch, long podTtlMs)
    implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    int g = keys.groupOf(stream.model(), stream.pod());
    byte[] podField = HashFields.podField(stream.model(), stream.pod());
    return ScriptCall.of(Scripts.PUBLISH)
        .key("meta", keys.meta(g))
        .key("streams", keys.streams(g))
        .key("pods", keys.pods(g))
        .key("blocks", keys.blocks(g))
        .key("lease", keys.lease(stream))
        .key("dead", keys.dead(g))
        .arg("stream_field", HashFields.streamField(stream))
        .arg("pod_field", podField)
        .arg("rank", HashFields.rank(stream.dpRank()))
        .arg("lease", lease.toString())
        .arg("holder_field", HashFields.holderField(podField))
        .arg("epoch", epoch)
        .arg("pod_ttl_ms", podTtlMs)
        .build();
  }
}
