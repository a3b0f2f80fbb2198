package io.kvindex.index.redis;

/** time.lua's call: the clock of the node serving the group. */
record TimeCall(int group) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.TIME).key("group_key", keys.meta(group)).build();
  }
}
