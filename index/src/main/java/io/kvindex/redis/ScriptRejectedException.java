package io.kvindex.redis;

/**
 * One of our own Lua scripts refused the call with an error code of its own, sent as {@code
 * redis.error_reply('KVINDEX_<NAME> <detail>')}, for example a stale fencing token. The script
 * changed nothing before refusing. Immutable, thread-safe.
 */
public final class ScriptRejectedException extends RedisRealException {

  private final String detail;

  ScriptRejectedException(String operation, ClassifiedError error) {
    super(operation, error, "the script refused the call");
    String message = error.error().getMessage();
    int space = message.indexOf(' ');
    this.detail = space < 0 ? "" : message.substring(space + 1);
  }

  /** The text after the code, as the script sent it. */
  public String detail() {
    return detail;
  }
}
