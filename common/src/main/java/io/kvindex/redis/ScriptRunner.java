package io.kvindex.redis;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Runs {@link LuaScript}s with EVALSHA, on a standalone or a cluster connection, with binary keys
 * and arguments. On NOSCRIPT (a restarted or new node, a failover, SCRIPT FLUSH) it sends the
 * script with EVAL once, right away and outside the retry budget; a second NOSCRIPT is a real
 * error. Every key the script touches must be passed in {@code keys} (the cluster routes by the
 * first key; all keys must share one hash slot).
 *
 * <p>Counts reloads in {@code kvindex.redis.script.reloads{script}}. Thread-safe.
 */
public interface ScriptRunner {

  /**
   * Runs the script under the runner's {@link RedisCalls}: temporary errors are retried and then
   * swallowed, real ones fail the stage with a typed {@link RedisRealException}. The operation name
   * in metrics is the script's name.
   *
   * @param type how to decode the reply (INTEGER → Long, MULTI → List, VALUE → byte[], ...)
   * @param keys every key the script touches, at least one
   * @param args the script's ARGV
   */
  <T> CompletionStage<RedisOutcome<T>> run(
      LuaScript script, ScriptOutputType type, byte[][] keys, byte[]... args);

  /**
   * One attempt without retry: EVALSHA, and EVAL once if the node lacks the script. Fails with the
   * lettuce exception; for callers that compose their own {@link RedisCalls}.
   */
  <T> CompletionStage<T> attempt(
      LuaScript script, ScriptOutputType type, byte[][] keys, byte[]... args);

  /**
   * Loads scripts into the script cache (SCRIPT LOAD; on a cluster, into every node that can
   * answer: each primary that owns slots and each replica, none flagged failing or failed, so that
   * a primary lost for good does not fail every later preload) so the first calls need no EVAL.
   * Optional: {@link #run} reloads on NOSCRIPT anyway, since restarted and new nodes start empty.
   * Retried and swallowed like any call (operation {@code script_load}).
   */
  CompletionStage<RedisOutcome<Void>> preload(LuaScript... scripts);

  /** The calls the runner retries with. */
  RedisCalls calls();

  /**
   * A runner on any lettuce binary connection: both {@code RedisAsyncCommands} and {@code
   * RedisAdvancedClusterAsyncCommands} are {@link RedisScriptingAsyncCommands}. Its preload sends
   * SCRIPT LOAD through that connection, which on a cluster means every node in lettuce's list, a
   * failed one too; {@link RedisConnector#scripts} chooses the nodes instead.
   */
  static ScriptRunner create(
      RedisScriptingAsyncCommands<byte[], byte[]> commands,
      RedisCalls calls,
      MeterRegistry meterRegistry) {
    return new EvalShaScriptRunner(
        commands,
        () -> CompletableFuture.completedFuture(List.of(commands)),
        calls,
        new RedisMetrics(meterRegistry));
  }
}
