package io.kvindex.simulator.engine;

import java.util.function.LongPredicate;

/** Computes a request's chained block hashes, as the engine's prefix cache does. */
public interface ChainHasher {

  /** The external hashes of the full blocks of {@code tokens}. */
  long[] hashes(int[] tokens, String loraName, String cacheSalt);

  /**
   * The hashes of the leading full blocks of {@code tokens} that {@code held} accepts, then the
   * hash of the first one it refuses (if any): a prefix lookup that hashes little further than the
   * cache holds.
   */
  long[] hashesWhile(int[] tokens, String loraName, String cacheSalt, LongPredicate held);
}
