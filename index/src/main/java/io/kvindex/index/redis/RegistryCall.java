package io.kvindex.index.redis;

/**
 * registry.lua's call: registers (or, with a ttl of -1, deregisters) a replica of the ingesters.
 *
 * @param process the calling process (unique to its run)
 */
record RegistryCall(String replica, long ttlMs, String process) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.REGISTRY)
        .key("registry", keys.replicas())
        .key("holders", keys.replicaProcesses())
        .arg("replica", replica)
        .arg("ttl_ms", ttlMs)
        .arg("process", process)
        .build();
  }
}
