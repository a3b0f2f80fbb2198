package io.kvindex.redis;

import io.kvindex.common.KvIndexException;

/**
 * A script is not in the Redis node's script cache, and the runner that asked for it does not load
 * scripts (a router's: its Redis user runs EVALSHA of loaded scripts only). Temporary: the
 * processes that load scripts (ingesters) load them again as soon as they find a node without them,
 * so the call is retried within its budget, then swallowed and counted. Immutable, thread-safe.
 */
public final class ScriptNotLoadedException extends KvIndexException {

  private final String script;

  ScriptNotLoadedException(String script, Throwable cause) {
    super(
        "script '"
            + script
            + "' is not loaded on this Redis node, and this process does not load scripts (a"
            + " router runs only the scripts ingesters load: its Redis user needs no EVAL or"
            + " SCRIPT LOAD). Ingesters load every script when they open the index and again"
            + " within seconds after a node lost them (a restart, a failover, SCRIPT FLUSH): make"
            + " sure an ingester of this index runs against this Redis",
        cause);
    this.script = script;
  }

  /** The missing script's name. */
  public String script() {
    return script;
  }
}
