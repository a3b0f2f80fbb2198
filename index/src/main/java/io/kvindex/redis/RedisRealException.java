package io.kvindex.redis;

import io.kvindex.common.KvIndexException;
import java.util.Map;

/**
 * A Redis call failed for a reason retrying cannot fix: a script bug, data of the wrong type, a
 * permission, a closed client. The message says what to do; the cause is the lettuce exception.
 * Immutable, thread-safe.
 */
public class RedisRealException extends KvIndexException {

  private static final Map<String, String> ADVICE =
      Map.ofEntries(
          Map.entry(
              "oom",
              "Redis refused the write: used memory > maxmemory; raise maxmemory or add shards;"
                  + " the index must run with maxmemory-policy noeviction"),
          Map.entry(
              "wrongtype",
              "a key holds a value of another type: another application writes into the index's"
                  + " key space; give the index its own Redis database or another index name"),
          Map.entry(
              "crossslot",
              "a script's keys are in different hash slots: a key-schema bug, please report it"),
          Map.entry(
              "noperm",
              "the Redis user lacks a permission: give it the ACL line of its role"
                  + " (docs/operations.md, \"Redis users and TLS\")"),
          Map.entry("noauth", "Redis wants a password: put user and password in the Redis URI"),
          Map.entry("wrongpass", "the user or password in the Redis URI is wrong: fix the URI"),
          Map.entry("execabort", "a transaction was aborted: a client bug, please report it"),
          Map.entry(
              "lua", "a kvindex Lua script failed: a bug, please report it with this message"),
          Map.entry(
              "script_killed",
              "an operator stopped the script with SCRIPT KILL: run the call again"),
          Map.entry("err", "Redis rejected the command: a bug or an unsupported Redis version"),
          Map.entry(
              "noscript",
              "the script vanished right after EVAL loaded it: something flushes the script cache"
                  + " (SCRIPT FLUSH) in a loop; stop it"),
          Map.entry(
              "readonly",
              "the Redis endpoint is a read-only replica: point the URI at the primary, or at a"
                  + " cluster"),
          Map.entry(
              "interrupted",
              "the calling thread was interrupted (shutting down); its interrupt flag is set"),
          Map.entry("protocol", "the Redis reply could not be decoded: a bug, please report it"),
          Map.entry("closed", "the Redis client is closed (shutting down)"));

  private final String operation;
  private final String reason;
  private final String code;

  RedisRealException(String operation, ClassifiedError error) {
    this(operation, error, advice(error.reason()));
  }

  RedisRealException(String operation, ClassifiedError error, String advice) {
    super(
        "Redis call '"
            + operation
            + "' failed ("
            + error.reason()
            + "): "
            + advice
            + ". Redis said: "
            + error.error().getMessage(),
        error.error());
    this.operation = operation;
    this.reason = error.reason();
    this.code = error.code();
  }

  /** The name of the failed call, as given to {@link RedisCalls}. */
  public String operation() {
    return operation;
  }

  /** The short reason (a metric tag), see {@link ClassifiedError}. */
  public String reason() {
    return reason;
  }

  /** The first word of the server's error reply, or null for a client-side failure. */
  public String code() {
    return code;
  }

  static String advice(String reason) {
    return ADVICE.getOrDefault(reason, "unexpected failure, see the cause");
  }
}
