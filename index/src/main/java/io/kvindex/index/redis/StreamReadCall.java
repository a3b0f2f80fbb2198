package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/** read.lua's call for a stream's record (its slot, watermark and batch in progress). */
record StreamReadCall(StreamId stream) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.READ)
        .key("hash", keys.streams(keys.groupOf(stream.model(), stream.pod())))
        .arg("field", HashFields.streamField(stream))
        .build();
  }
}
