package io.kvindex.simulator.engine;

/** Computes a request's chained block hashes, as the engine's prefix cache does. */
public interface ChainHasher {

  /** The external hashes of the full blocks of {@code tokens}. */
  long[] hashes(int[] tokens, String loraName, String cacheSalt);
}
