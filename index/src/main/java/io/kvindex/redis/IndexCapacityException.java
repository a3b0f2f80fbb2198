package io.kvindex.redis;

/**
 * Redis refused a write because its memory is full (OOM under {@code maxmemory}). A capacity
 * problem, not a blip: it lasts until someone raises {@code maxmemory}, adds shards, or the index
 * shrinks. Redis checks memory before a script's first write, so no half-applied script is left
 * behind; deletes keep working. Immutable, thread-safe.
 */
public final class IndexCapacityException extends RedisRealException {

  IndexCapacityException(String operation, ClassifiedError error) {
    super(operation, error);
  }
}
