package io.kvindex.simulator;

/** How a simulated engine computes its block hashes. Immutable. */
public enum HashMode {
  /**
   * vLLM's {@code sha256_cbor} with the configured {@code PYTHONHASHSEED} and block size: a router
   * can recompute these hashes (engine-key mode).
   */
  ENGINE,
  /**
   * A per-process random seed, like vLLM started without {@code PYTHONHASHSEED}: nobody else can
   * recompute the hashes and they change on every restart (exercises token-key mode).
   */
  RANDOM
}
