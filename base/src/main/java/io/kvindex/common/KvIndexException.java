package io.kvindex.common;

/**
 * Base of every unchecked exception kvindex throws on purpose. Subclasses say by their type whether
 * a failure is temporary or real; messages say what to do about it. Immutable, thread-safe.
 */
public abstract class KvIndexException extends RuntimeException {

  protected KvIndexException(String message, Throwable cause) {
    super(message, cause);
  }

  protected KvIndexException(String message) {
    super(message);
  }
}
