/**
 * Redis access for kvindex: one connection per process ({@link io.kvindex.redis.RedisConnector}),
 * Lua scripts run by SHA ({@link io.kvindex.redis.LuaScript}, {@link
 * io.kvindex.redis.ScriptRunner}), and one error policy for every call ({@link
 * io.kvindex.redis.RedisCalls}).
 *
 * <p>The policy, decided by {@link io.kvindex.redis.RedisErrorClassifier}:
 *
 * <ul>
 *   <li>temporary (connection lost or refused, command timeout, BUSY, LOADING, CLUSTERDOWN,
 *       TRYAGAIN, MASTERDOWN, leftover MOVED/ASK, stale cluster view): retried with jittered
 *       exponential backoff within a {@link io.kvindex.redis.RetryPolicy}'s total budget, then
 *       swallowed: the call completes with {@link io.kvindex.redis.RedisOutcome.Swallowed} and
 *       {@code kvindex.redis.swallowed} counts it. READONLY is retried too, but surfaces as real
 *       when the budget is spent;
 *   <li>reload (NOSCRIPT): a runner that loads scripts (a writer's) sends the script with EVAL
 *       once, at once, outside the budget, and loads every script it preloaded again; one that does
 *       not (a router's) fails the attempt with a temporary {@link
 *       io.kvindex.redis.ScriptNotLoadedException} instead, retried and swallowed as above;
 *   <li>real (Lua errors, WRONGTYPE, CROSSSLOT, ACL and auth errors, OOM, our own {@code KVINDEX_*}
 *       script codes, protocol errors, a closed client, anything unknown): the call fails at once
 *       with a {@link io.kvindex.redis.RedisRealException}, an {@link
 *       io.kvindex.redis.IndexCapacityException} for OOM or a {@link
 *       io.kvindex.redis.ScriptRejectedException} for our codes, counted in {@code
 *       kvindex.redis.errors}.
 * </ul>
 *
 * <p>Every call must be idempotent: a timed-out command may still have run, and it is sent again.
 */
package io.kvindex.redis;
