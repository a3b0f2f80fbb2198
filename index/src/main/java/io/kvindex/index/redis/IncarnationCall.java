package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/** incarnation.lua's calls: reads, or sets if it is as expected, the stream's incarnation. */
final class IncarnationCall {
  private IncarnationCall() {}

  /** The stream's incarnation. */
  record Get(StreamId stream) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INCARNATION, "get")
          .key("incarnation", keys.incarnation(stream))
          .build();
    }
  }

  /**
   * Sets the stream's incarnation if the recorded one is {@code expected}.
   *
   * @param expected the incarnation expected ("" for none)
   */
  record Set(StreamId stream, String expected, String incarnation, long ttlMs)
      implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.INCARNATION, "set")
          .key("incarnation", keys.incarnation(stream))
          .arg("expected", expected)
          .arg("incarnation", incarnation)
          .arg("ttl_ms", Long.toString(ttlMs))
          .build();
    }
  }
}
