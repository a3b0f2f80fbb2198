package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/** staged.lua's call: whether the stream's entries are staged (its pod record lacks its slot). */
record StagedCall(StreamId stream) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    int g = keys.groupOf(stream.model(), stream.pod());
    return ScriptCall.of(Scripts.STAGED)
        .key("streams", keys.streams(g))
        .key("pods", keys.pods(g))
        .arg("stream_field", HashFields.streamField(stream))
        .arg("pod_field", HashFields.podField(stream.model(), stream.pod()))
        .arg("rank", HashFields.rank(stream.dpRank()))
        .build();
  }
}
