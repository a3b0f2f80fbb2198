package io.kvindex.index.redis;

/**
 * sweep.lua's call: one step of the sweep of the group's departed pods (those silent past {@code
 * retentionMs}).
 */
record SweepCall(int group, int budget, long retentionMs) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.SWEEP)
        .key("meta", keys.meta(group))
        .key("streams", keys.streams(group))
        .key("pods", keys.pods(group))
        .key("blocks", keys.blocks(group))
        .key("dead", keys.dead(group))
        .key("activity", keys.activity(group))
        .arg("scan_count", budget)
        .arg("retention_ms", retentionMs)
        .arg("holder_prefix", KeySchema.HOLDER_PREFIX)
        .build();
  }
}
