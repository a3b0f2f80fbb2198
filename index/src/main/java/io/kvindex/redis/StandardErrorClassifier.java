package io.kvindex.redis;

import static io.kvindex.redis.RedisErrorClass.REAL;
import static io.kvindex.redis.RedisErrorClass.RELOAD;
import static io.kvindex.redis.RedisErrorClass.TEMPORARY;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandInterruptedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.PartitionException;
import io.lettuce.core.protocol.RedisProtocolException;
import java.io.IOException;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;

/** The rules of {@link RedisErrorClassifier#standard()}. Stateless, thread-safe. */
final class StandardErrorClassifier implements RedisErrorClassifier {

  static final StandardErrorClassifier STANDARD = new StandardErrorClassifier(false);
  static final StandardErrorClassifier OOM_TEMPORARY = new StandardErrorClassifier(true);

  /** Error codes that clear by themselves: another script ends, a failover or reshard finishes. */
  private static final Set<String> TEMPORARY_CODES =
      Set.of(
          "BUSY", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "MASTERDOWN", "READONLY");

  /** Error codes of data, usage or permission problems: retrying gives the same answer. */
  private static final Set<String> REAL_CODES =
      Set.of("WRONGTYPE", "CROSSSLOT", "NOPERM", "NOAUTH", "WRONGPASS", "EXECABORT");

  /** Prefix of the error codes our own Lua scripts send with {@code redis.error_reply}. */
  static final String SCRIPT_CODE_PREFIX = "KVINDEX_";

  private final boolean oomIsTemporary;

  private StandardErrorClassifier(boolean oomIsTemporary) {
    this.oomIsTemporary = oomIsTemporary;
  }

  @Override
  public ClassifiedError classify(Throwable failure) {
    Throwable e = RedisErrorClassifier.unwrap(failure);
    if (e instanceof RedisRealException real) {
      return new ClassifiedError(REAL, real.reason(), real.code(), real);
    }
    if (e instanceof ScriptNotLoadedException) {
      return new ClassifiedError(TEMPORARY, "noscript", "NOSCRIPT", e);
    }
    if (e instanceof RedisUnavailableException unavailable) {
      return new ClassifiedError(TEMPORARY, unavailable.lastError().reason(), null, unavailable);
    }
    if (e instanceof RedisCommandExecutionException reply) {
      return serverReply(reply);
    }
    if (e instanceof RedisException client) {
      return clientSide(client);
    }
    if (e instanceof IOException) {
      return new ClassifiedError(TEMPORARY, "connection", null, e);
    }
    if (e instanceof TimeoutException) {
      return new ClassifiedError(TEMPORARY, "timeout", null, e);
    }
    if (e instanceof RejectedExecutionException) {
      return new ClassifiedError(REAL, "closed", null, e);
    }
    return new ClassifiedError(REAL, "unknown", null, e);
  }

  private static ClassifiedError clientSide(RedisException e) {
    if (e instanceof DeadlineExceededException) {
      return new ClassifiedError(TEMPORARY, "deadline", null, e);
    }
    // Our scripts are idempotent (sequence watermark, set semantics), so a command that timed out
    // and may still have run on the server is safe to send again.
    if (e instanceof RedisCommandTimeoutException) {
      return new ClassifiedError(TEMPORARY, "timeout", null, e);
    }
    if (e instanceof RedisConnectionException) {
      return new ClassifiedError(TEMPORARY, "connection", null, e);
    }
    if (e instanceof PartitionException) {
      return new ClassifiedError(TEMPORARY, "partition", null, e);
    }
    if (e instanceof RedisCommandInterruptedException) {
      return new ClassifiedError(REAL, "interrupted", null, e);
    }
    if (e instanceof RedisProtocolException) {
      return new ClassifiedError(REAL, "protocol", null, e);
    }
    return clientMessage(e);
  }

  private static ClassifiedError clientMessage(RedisException e) {
    String message = e.getMessage() == null ? "" : e.getMessage();
    if (message.startsWith("Currently not connected")) {
      return new ClassifiedError(TEMPORARY, "not_connected", null, e);
    }
    if (message.contains("queue size exceeded")
        || message.contains("buffer size exceeded")
        || message.contains("stack size exceeded")) {
      return new ClassifiedError(TEMPORARY, "queue_full", null, e);
    }
    // In flight when the link dropped: it may have run; safe to resend because scripts are
    // idempotent.
    if (message.startsWith("Connection disconnected")) {
      return new ClassifiedError(TEMPORARY, "disconnected", null, e);
    }
    if (message.startsWith("Connection closed") || message.startsWith("Connection is closed")) {
      return new ClassifiedError(REAL, "closed", null, e);
    }
    // A socket error (reset by peer, broken pipe) that lettuce passed on wrapped.
    if (e.getCause() instanceof IOException) {
      return new ClassifiedError(TEMPORARY, "connection", null, e);
    }
    return new ClassifiedError(REAL, "unknown", null, e);
  }

  private ClassifiedError serverReply(RedisCommandExecutionException e) {
    String code = code(e.getMessage());
    if (code.equals("NOSCRIPT")) {
      return new ClassifiedError(RELOAD, "noscript", code, e);
    }
    if (TEMPORARY_CODES.contains(code)) {
      return new ClassifiedError(TEMPORARY, code.toLowerCase(Locale.ROOT), code, e);
    }
    if (code.equals("OOM")) {
      return new ClassifiedError(oomIsTemporary ? TEMPORARY : REAL, "oom", code, e);
    }
    if (code.equals("ERR")) {
      return new ClassifiedError(REAL, errReason(e.getMessage()), code, e);
    }
    if (REAL_CODES.contains(code)) {
      return new ClassifiedError(REAL, code.toLowerCase(Locale.ROOT), code, e);
    }
    if (code.startsWith(SCRIPT_CODE_PREFIX)) {
      return new ClassifiedError(REAL, code, code, e);
    }
    return new ClassifiedError(REAL, "unknown", code.isEmpty() ? null : code, e);
  }

  /** The first word of an error reply: {@code BUSY} but never {@code BUSYKEY} for "BUSY". */
  static String code(String message) {
    if (message == null) {
      return "";
    }
    int space = message.indexOf(' ');
    return space < 0 ? message : message.substring(0, space);
  }

  private static String errReason(String message) {
    if (message.contains("Script killed")) {
      return "script_killed";
    }
    if (message.startsWith("ERR user_script")
        || message.startsWith("ERR Error compiling script")
        || message.startsWith("ERR Error running script")
        || message.contains(" script: ")) {
      return "lua";
    }
    return "err";
  }
}
