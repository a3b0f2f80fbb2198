package io.kvindex.redis;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Runs {@link LuaScript}s with EVALSHA, on a standalone or a cluster connection, with binary keys
 * and arguments. Every key the script touches must be passed in {@code keys} (the cluster routes by
 * the first key; all keys must share one hash slot).
 *
 * <p>On NOSCRIPT (a restarted or new node, a failover, SCRIPT FLUSH), a runner that {@linkplain
 * #loadsScripts() loads scripts} sends the script with EVAL once, right away and outside the retry
 * budget (a second NOSCRIPT is a real error), and loads every script it {@linkplain #preload
 * preloaded} again; reloads are counted in {@code kvindex.redis.script.reloads{script}}. A runner
 * that does not (a router's, whose Redis user runs EVALSHA of loaded scripts only) never sends EVAL
 * or SCRIPT LOAD: the attempt fails with a temporary {@link ScriptNotLoadedException}, so the call
 * is retried within its budget until a loading process has loaded the script, then swallowed;
 * counted in {@code kvindex.redis.script.missing{script}} and logged at most every 10 s.
 *
 * <p>Thread-safe.
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
   * One attempt without retry: EVALSHA, and EVAL once if the node lacks the script (a runner that
   * does not load scripts fails with {@link ScriptNotLoadedException} instead). Fails with the
   * lettuce exception; for callers that compose their own {@link RedisCalls}.
   */
  <T> CompletionStage<T> attempt(
      LuaScript script, ScriptOutputType type, byte[][] keys, byte[]... args);

  /**
   * Loads scripts into the script cache (SCRIPT LOAD; on a cluster, into every node that can
   * answer: each primary that owns slots and each replica, none flagged failing or failed, so that
   * a primary lost for good does not fail every later preload) so the first calls need no EVAL, and
   * remembers them: a later NOSCRIPT loads them all again. Retried and swallowed like any call
   * (operation {@code script_load}).
   *
   * @throws IllegalStateException if this runner does not {@linkplain #loadsScripts() load scripts}
   */
  CompletionStage<RedisOutcome<Void>> preload(LuaScript... scripts);

  /** Whether this runner sends EVAL and SCRIPT LOAD when a node lacks a script. */
  boolean loadsScripts();

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
        new RedisMetrics(meterRegistry),
        true);
  }
}
