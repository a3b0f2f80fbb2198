package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * EVALSHA first, EVAL once on NOSCRIPT; EVALSHA_RO and EVAL_RO for {@linkplain LuaScript#readOnly()
 * read-only} scripts. Preloads with SCRIPT LOAD on each node its {@code loadInto} names at the
 * time. Thread-safe: lettuce connections are.
 */
final class EvalShaScriptRunner implements ScriptRunner {

  private final RedisScriptingAsyncCommands<byte[], byte[]> commands;
  private final Supplier<CompletionStage<List<RedisScriptingAsyncCommands<byte[], byte[]>>>>
      loadInto;
  private final RedisCalls calls;
  private final RedisMetrics metrics;

  /**
   * @param commands where scripts run
   * @param loadInto the nodes a preload loads the scripts into, asked at each attempt
   */
  EvalShaScriptRunner(
      RedisScriptingAsyncCommands<byte[], byte[]> commands,
      Supplier<CompletionStage<List<RedisScriptingAsyncCommands<byte[], byte[]>>>> loadInto,
      RedisCalls calls,
      RedisMetrics metrics) {
    this.commands = Check.notNull(commands, "commands");
    this.loadInto = Check.notNull(loadInto, "loadInto");
    this.calls = Check.notNull(calls, "calls");
    this.metrics = metrics;
  }

  @Override
  public <T> CompletionStage<RedisOutcome<T>> run(
      LuaScript script, ScriptOutputType type, byte[][] keys, byte[]... args) {
    check(script, type, keys, args);
    return calls.call(script.name(), () -> this.<T>attempt(script, type, keys, args));
  }

  @Override
  public <T> CompletionStage<T> attempt(
      LuaScript script, ScriptOutputType type, byte[][] keys, byte[]... args) {
    check(script, type, keys, args);
    CompletionStage<T> evalsha =
        send(
            () ->
                script.readOnly()
                    ? commands.evalshaReadOnly(script.sha1(), type, keys, args)
                    : commands.evalsha(script.sha1(), type, keys, args));
    return evalsha
        .<CompletionStage<T>>handle(
            (value, error) ->
                error == null
                    ? CompletableFuture.completedFuture(value)
                    : reloadIfMissing(error, script, type, keys, args))
        .thenCompose(Function.identity());
  }

  @Override
  public CompletionStage<RedisOutcome<Void>> preload(LuaScript... scripts) {
    Check.notNull(scripts, "scripts");
    for (LuaScript script : scripts) {
      Check.notNull(script, "script");
    }
    return calls.call(
        "script_load", () -> send(loadInto::get).thenCompose(nodes -> loadAll(nodes, scripts)));
  }

  private static CompletionStage<Void> loadAll(
      List<RedisScriptingAsyncCommands<byte[], byte[]>> nodes, LuaScript[] scripts) {
    List<CompletableFuture<Void>> loads = new ArrayList<>();
    for (RedisScriptingAsyncCommands<byte[], byte[]> node : nodes) {
      for (LuaScript script : scripts) {
        loads.add(
            send(() -> node.scriptLoad(script.source()))
                .thenAccept(sha -> checkDigest(script, sha))
                .toCompletableFuture());
      }
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture<?>[0]));
  }

  private static void checkDigest(LuaScript script, String sha) {
    if (!script.sha1().equals(sha)) {
      throw new IllegalStateException(
          "Redis digests script '" + script.name() + "' as " + sha + ", we as " + script.sha1());
    }
  }

  @Override
  public RedisCalls calls() {
    return calls;
  }

  private <T> CompletionStage<T> reloadIfMissing(
      Throwable error, LuaScript script, ScriptOutputType type, byte[][] keys, byte[][] args) {
    if (calls.classifier().classify(error).errorClass() != RedisErrorClass.RELOAD) {
      return CompletableFuture.failedFuture(error);
    }
    metrics.reload(script.name());
    CompletionStage<T> eval =
        send(
            () ->
                script.readOnly()
                    ? commands.evalReadOnly(script.source(), type, keys, args)
                    : commands.eval(script.source(), type, keys, args));
    return eval.<CompletionStage<T>>handle(
            (value, again) ->
                again == null
                    ? CompletableFuture.completedFuture(value)
                    : CompletableFuture.<T>failedFuture(secondNoScript(again, script)))
        .thenCompose(Function.identity());
  }

  private Throwable secondNoScript(Throwable error, LuaScript script) {
    ClassifiedError classified = calls.classifier().classify(error);
    if (classified.errorClass() != RedisErrorClass.RELOAD) {
      return error;
    }
    return new RedisRealException(
        script.name(),
        new ClassifiedError(
            RedisErrorClass.REAL, "noscript", classified.code(), classified.error()));
  }

  private static <T> CompletionStage<T> send(
      java.util.function.Supplier<CompletionStage<T>> command) {
    try {
      return command.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private static void check(LuaScript script, ScriptOutputType type, byte[][] keys, byte[][] args) {
    Check.notNull(script, "script");
    Check.notNull(type, "type");
    Check.notNull(keys, "keys");
    Check.notNull(args, "args");
    if (keys.length == 0) {
      throw new IllegalArgumentException(
          "keys must name every key script '" + script.name() + "' touches, got none");
    }
  }
}
