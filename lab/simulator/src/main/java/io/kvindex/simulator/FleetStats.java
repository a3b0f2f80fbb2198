package io.kvindex.simulator;

/**
 * A snapshot of a fleet's counters. Immutable and thread-safe.
 *
 * @param requests requests served
 * @param failed requests refused (pod asleep, request too large)
 * @param promptTokens prompt tokens of the served requests
 * @param cachedTokens of those, tokens served from a prefix cache
 */
public record FleetStats(long requests, long failed, long promptTokens, long cachedTokens) {

  /** Cached prompt tokens / prompt tokens; 0 before any request. */
  public double hitRate() {
    return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
  }
}
