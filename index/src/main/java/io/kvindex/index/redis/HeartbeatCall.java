package io.kvindex.index.redis;

/** heartbeat.lua's call: moves the pod's liveness deadline to now + {@code ttlMs}. */
record HeartbeatCall(String model, String pod, long ttlMs) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    int g = keys.groupOf(model, pod);
    byte[] podField = HashFields.podField(model, pod);
    return ScriptCall.of(Scripts.HEARTBEAT)
        .key("pods", keys.pods(g))
        .key("blocks", keys.blocks(g))
        .arg("pod_field", podField)
        .arg("ttl_ms", ttlMs)
        .arg("holder_field", HashFields.holderField(podField))
        .build();
  }
}
