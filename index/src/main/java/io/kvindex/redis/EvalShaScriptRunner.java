package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * EVALSHA first; EVALSHA_RO for {@linkplain LuaScript#readOnly() read-only} scripts. On NOSCRIPT a
 * runner that loads scripts sends the script with EVAL (EVAL_RO) once and loads every script it
 * preloaded again, since a node that lost one script lost them all (a restart, a failover, SCRIPT
 * FLUSH) and processes that do not load scripts wait for them; a runner that does not load scripts
 * fails the attempt with a temporary {@link ScriptNotLoadedException}, counts it and says so in the
 * log. Preloads with SCRIPT LOAD on each node its {@code loadInto} names at the time. Thread-safe:
 * lettuce connections are.
 */
final class EvalShaScriptRunner implements ScriptRunner {
  private static final Logger LOG = LoggerFactory.getLogger(EvalShaScriptRunner.class);

  /** How often, at most, a NOSCRIPT makes a loading runner load its preloaded scripts again. */
  private static final long RELOAD_ALL_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** How often, at most, a runner that does not load scripts logs a missing one. */
  private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final RedisScriptingAsyncCommands<byte[], byte[]> commands;
  private final Supplier<CompletionStage<List<RedisScriptingAsyncCommands<byte[], byte[]>>>>
      loadInto;
  private final RedisCalls calls;
  private final RedisMetrics metrics;
  private final boolean loads;
  private final AtomicLong lastReloadAllNanos =
      new AtomicLong(System.nanoTime() - RELOAD_ALL_INTERVAL_NANOS);
  private final AtomicLong lastWarnNanos = new AtomicLong(System.nanoTime() - WARN_INTERVAL_NANOS);

  /** What {@link #preload} was last given: loaded again after a NOSCRIPT. */
  private volatile LuaScript[] preloaded = new LuaScript[0];

  /**
   * @param commands where scripts run
   * @param loadInto the nodes a preload loads the scripts into, asked at each attempt
   */
  EvalShaScriptRunner(
      RedisScriptingAsyncCommands<byte[], byte[]> commands,
      Supplier<CompletionStage<List<RedisScriptingAsyncCommands<byte[], byte[]>>>> loadInto,
      RedisCalls calls,
      RedisMetrics metrics,
      boolean loads) {
    this.commands = Check.notNull(commands, "commands");
    this.loadInto = Check.notNull(loadInto, "loadInto");
    this.calls = Check.notNull(calls, "calls");
    this.metrics = Check.notNull(metrics, "metrics");
    this.loads = loads;
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
    if (!loads) {
      throw new IllegalStateException("this script runner does not load scripts");
    }
    Check.notNull(scripts, "scripts");
    for (LuaScript script : scripts) {
      Check.notNull(script, "script");
    }
    preloaded = scripts.clone();
    return calls.call("script_load", () -> loadAll(scripts));
  }

  @Override
  public boolean loadsScripts() {
    return loads;
  }

  private CompletionStage<Void> loadAll(LuaScript[] scripts) {
    return send(loadInto::get).thenCompose(nodes -> loadAll(nodes, scripts));
  }

  private static CompletionStage<Void> loadAll(
      List<RedisScriptingAsyncCommands<byte[], byte[]>> nodes, LuaScript[] scripts) {
    List<CompletableFuture<Void>> sent = new ArrayList<>();
    for (RedisScriptingAsyncCommands<byte[], byte[]> node : nodes) {
      for (LuaScript script : scripts) {
        sent.add(
            send(() -> node.scriptLoad(script.source()))
                .thenAccept(sha -> checkDigest(script, sha))
                .toCompletableFuture());
      }
    }
    return CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0]));
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
    if (!loads) {
      return CompletableFuture.failedFuture(notLoaded(script, error));
    }
    metrics.reload(script.name());
    reloadPreloaded();
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

  private ScriptNotLoadedException notLoaded(LuaScript script, Throwable error) {
    metrics.missing(script.name());
    ScriptNotLoadedException missing = new ScriptNotLoadedException(script.name(), error);
    long now = System.nanoTime();
    long last = lastWarnNanos.get();
    if (now - last >= WARN_INTERVAL_NANOS && lastWarnNanos.compareAndSet(last, now)) {
      LOG.warn(
          "{} (further ones within 10 s only counted in {})",
          missing.getMessage(),
          RedisMetrics.MISSING);
    }
    return missing;
  }

  /**
   * Loads every preloaded script again, without waiting and at most once a second: a node that
   * answers NOSCRIPT lost its whole script cache, and the scripts only routers run would otherwise
   * stay missing there.
   */
  private void reloadPreloaded() {
    LuaScript[] scripts = preloaded;
    long now = System.nanoTime();
    long last = lastReloadAllNanos.get();
    if (scripts.length == 0
        || now - last < RELOAD_ALL_INTERVAL_NANOS
        || !lastReloadAllNanos.compareAndSet(last, now)) {
      return;
    }
    calls
        .call("script_load", () -> loadAll(scripts))
        .whenComplete(
            (outcome, error) -> {
              if (error != null || !outcome.isDone()) {
                LOG.info(
                    "could not load the scripts again after a NOSCRIPT ({}); routers wait for"
                        + " them until the next one",
                    error != null ? error.getMessage() : outcome);
              }
            });
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

  private static <T> CompletionStage<T> send(Supplier<CompletionStage<T>> command) {
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
