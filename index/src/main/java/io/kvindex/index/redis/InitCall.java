package io.kvindex.index.redis;

/**
 * init.lua's call: records the group count, an epoch and the index format in the group's meta if it
 * has none, and answers those it has.
 *
 * @param epoch a new epoch, used only if the group has none
 */
record InitCall(int group, int groups, String epoch, int format) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.INIT)
        .key("meta", keys.meta(group))
        .key("blocks", keys.blocks(group))
        .arg("groups", groups)
        .arg("epoch", epoch)
        .arg("version", KeySchema.STORED_VERSION)
        .arg("format", format)
        .build();
  }
}
