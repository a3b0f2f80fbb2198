package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/** resync.lua's calls: a router requests a pod's resync; a stream's owner takes it. */
final class ResyncCall {
  private ResyncCall() {}

  /** Requests a resync of the pod, at most one per {@code intervalMs}. */
  record Request(String model, String pod, String note, long intervalMs)
      implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.RESYNC, "request")
          .key("resync", keys.resync(model, pod))
          .arg("note", note)
          .arg("interval_ms", intervalMs)
          .build();
    }
  }

  /**
   * The stream takes the pod's request, unless it took one less than {@code spacingMs} ago.
   *
   * @param call the take's id (unique to one take, the same in its retries)
   */
  record Take(StreamId stream, String call, long spacingMs) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.RESYNC, "take")
          .key("resync", keys.resync(stream.model(), stream.pod()))
          .key("activity", keys.activity(keys.groupOf(stream.model(), stream.pod())))
          .arg("rank", stream.dpRank())
          .arg("call", Bytes.ascii(call))
          .arg("resynced_field", HashFields.resyncedField(HashFields.streamField(stream)))
          .arg("spacing_ms", spacingMs)
          .build();
    }
  }
}
