package io.kvindex.redis;

/** What a failed Redis call means for the caller. Immutable, thread-safe. */
public enum RedisErrorClass {
  /**
   * The call may succeed if tried again soon (connection lost or refused, command timeout, BUSY,
   * LOADING, cluster churn): retried with backoff, then swallowed and counted.
   */
  TEMPORARY,
  /**
   * The node does not have the script (NOSCRIPT): a runner that loads scripts sends it with EVAL
   * once, right away; one that does not fails the attempt as temporary.
   */
  RELOAD,
  /** Retrying gives the same answer (a bug, bad data, ACL, capacity): surfaced to the caller. */
  REAL
}
