package io.kvindex.localredis;

/**
 * A local redis-server could not be found, started, controlled or stopped. The message says what
 * happened and what to do; the cause, if any, is kept.
 *
 * <p>Instances are immutable and thread-safe.
 */
public class LocalRedisException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates an exception with a message that says what to do. */
  public LocalRedisException(String message) {
    super(message);
  }

  /** Creates an exception with a message that says what to do and the underlying cause. */
  public LocalRedisException(String message, Throwable cause) {
    super(message, cause);
  }
}
