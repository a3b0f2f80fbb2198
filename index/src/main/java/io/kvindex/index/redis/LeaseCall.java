package io.kvindex.index.redis;

import io.kvindex.index.StreamId;

/**
 * lease.lua's call: acquires, renews or releases the stream's lease.
 *
 * @param op {@code acquire}, {@code renew} or {@code release}
 * @param token the lease's token (renew, release; 0 for acquire)
 */
record LeaseCall(String op, StreamId stream, String owner, long ttlMs, long token)
    implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.LEASE, op)
        .key("meta", keys.meta(keys.groupOf(stream.model(), stream.pod())))
        .key("lease", keys.lease(stream))
        .arg("owner", owner)
        .arg("ttl_ms", ttlMs)
        .arg("token", token)
        .build();
  }
}
