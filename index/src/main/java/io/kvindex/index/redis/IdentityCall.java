package io.kvindex.index.redis;

/** identity.lua's call: the group's epoch, and the node history serving it and its data. */
record IdentityCall(int group) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.IDENTITY)
        .key("meta", keys.meta(group))
        .key("blocks", keys.blocks(group))
        .build();
  }
}
