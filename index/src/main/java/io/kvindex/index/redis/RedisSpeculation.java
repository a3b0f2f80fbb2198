package io.kvindex.index.redis;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Lookups;
import io.kvindex.index.PrefixIndex;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Speculative routes in Redis (speculate.lua, two keys per group): the bounds a route and a group's
 * routes keep to, and the call that records a route. Lookups read them ({@link SpeculativeRoutes}).
 * Thread-safe.
 */
final class RedisSpeculation {
  /**
   * Blocks one speculative route records at most: its first ones (16 segments and 3 spans, so a
   * route writes and a lookup reads at most 19 fields of routes). A route is a hint for the moment
   * until the engine's own events arrive.
   */
  static final int BLOCKS_PER_ROUTE = PrefixIndex.MAX_ROUTE_BLOCKS;

  /**
   * Fields a group's speculative routes hold at most (segments and spans routed through): past it,
   * those whose routes expire first are dropped.
   */
  static final int FIELDS_PER_GROUP = 16_384;

  /** Pods one segment's or span's speculative routes name at most: the latest routed there. */
  static final int PODS_PER_FIELD = 8;

  /** Blocks of a route between two of the keys kept for it (and its last block's key). */
  static final int KEY_EVERY = 16;

  private final KeySchema keys;
  private final ScriptRunner writes;

  RedisSpeculation(KeySchema keys, ScriptRunner writes) {
    this.keys = keys;
    this.writes = writes;
  }

  /** Records a route of the prompt to {@code pod}: see {@link Lookups#speculateAsync}. */
  CompletableFuture<Boolean> record(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl) {
    if (!Lookups.checkSpeculation(model, mode, pod, blockKeys, ttl)) {
      return CompletableFuture.completedFuture(true);
    }
    return new SpeculateCall(model, mode, pod, blockKeys, cacheGroup, ttl.toMillis())
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(outcome -> outcome.isDone() && outcome.orElseThrow() > 0);
  }
}
