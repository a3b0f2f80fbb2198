package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/** lag.lua's and lags.lua's calls: a stream's owner reports its lag; the reports of a pod. */
final class LagCall {
  private LagCall() {}

  /** The stream's owner is {@code lagMs} behind its engine. */
  record Report(StreamId stream, long lagMs, long ttlMs) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.LAG)
          .key("lag", keys.lag(stream.model(), stream.pod()))
          .arg("rank", stream.dpRank())
          .arg("lag_ms", lagMs)
          .arg("ttl_ms", ttlMs)
          .build();
    }
  }

  /** The reports of the pod's streams, with Redis's clock. */
  record Reports(String model, String pod) implements ScriptCall.Source {
    @Override
    public ScriptCall on(KeySchema keys) {
      return ScriptCall.of(Scripts.LAGS).key("lag", keys.lag(model, pod)).build();
    }
  }
}
