package io.kvindex.index.redis;

/** gc.lua's call: one step of the group's garbage collection, at most {@code budget} entries. */
record GcCall(int group, int budget) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.GC)
        .key("meta", keys.meta(group))
        .key("blocks", keys.blocks(group))
        .key("dead", keys.dead(group))
        .key("free", keys.free(group))
        .key("counts", keys.counts(group))
        .arg("scan_count", budget)
        .build();
  }
}
