package io.kvindex.index.redis;

/** pods.lua's call: the live pod fields of one model in the group. */
record PodsCall(int group, String model) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.PODS)
        .key("pods", keys.pods(group))
        .arg("model_prefix", HashFields.modelPrefix(model))
        .build();
  }
}
