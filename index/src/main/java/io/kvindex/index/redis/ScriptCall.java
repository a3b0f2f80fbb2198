package io.kvindex.index.redis;

import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One call of one of the index's scripts: its KEYS and ARGV in order, each named as the script's
 * header names its position ({@code -- KEYS: 1 meta, 2 blocks} and {@code -- ARGV: 1 groups, 2
 * epoch, ...}; a script of several operations has a header per operation, {@code -- ARGV (take): 1
 * op, 2 rank, ...}, and its first argument is the operation). Each call is built by one small
 * record (for example {@link InitCall}) whose {@code on(KeySchema)} is the one place that knows the
 * call's positions; ScriptCallHeadersTest checks every such record against its script's header.
 * Immutable (the byte arrays are not copied: do not change them); thread-safe.
 *
 * @param op the operation of a script of several ({@code mark}, {@code take}, ...), or null
 */
record ScriptCall(LuaScript script, String op, List<Arg> keys, List<Arg> argv) {
  ScriptCall {
    keys = List.copyOf(keys);
    argv = List.copyOf(argv);
  }

  /**
   * One KEYS or ARGV entry: the name its position has in the script's header, and its bytes. The
   * entries of a variadic tail ({@code 17.. events}) share its name.
   */
  record Arg(String name, byte[] value) {}

  /** A record that builds one call of one script. */
  interface Source {
    /** The call, its keys those of {@code keys}. */
    ScriptCall on(KeySchema keys);
  }

  static Builder of(LuaScript script) {
    return new Builder(script, null);
  }

  /** A call of one operation of a script of several: ARGV 1 is the operation. */
  static Builder of(LuaScript script, String op) {
    return new Builder(script, op).arg("op", op);
  }

  /** Runs the call (retried and swallowed as {@link ScriptRunner#run} says). */
  <T> CompletableFuture<RedisOutcome<T>> run(ScriptRunner runner, ScriptOutputType type) {
    return runner.<T>run(script, type, keyArray(), argArray()).toCompletableFuture();
  }

  byte[][] keyArray() {
    return values(keys);
  }

  byte[][] argArray() {
    return values(argv);
  }

  private static byte[][] values(List<Arg> args) {
    byte[][] out = new byte[args.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = args.get(i).value();
    }
    return out;
  }

  /** Adds KEYS and ARGV in the header's order. Not thread-safe. */
  static final class Builder {
    private final LuaScript script;
    private final String op;
    private final List<Arg> keys = new ArrayList<>();
    private final List<Arg> argv = new ArrayList<>();

    private Builder(LuaScript script, String op) {
      this.script = script;
      this.op = op;
    }

    Builder key(String name, byte[] key) {
      keys.add(new Arg(name, key));
      return this;
    }

    Builder arg(String name, byte[] value) {
      argv.add(new Arg(name, value));
      return this;
    }

    /** A number, as decimal ASCII (Lua's {@code tonumber} reads it). */
    Builder arg(String name, long value) {
      return arg(name, Bytes.ascii(value));
    }

    /** Text, as UTF-8. */
    Builder arg(String name, String value) {
      return arg(name, value.getBytes(StandardCharsets.UTF_8));
    }

    /** A variadic tail ({@code 17.. events}): each value under the one name. */
    Builder rest(String name, List<byte[]> values) {
      values.forEach(v -> arg(name, v));
      return this;
    }

    ScriptCall build() {
      return new ScriptCall(script, op, keys, argv);
    }
  }
}
