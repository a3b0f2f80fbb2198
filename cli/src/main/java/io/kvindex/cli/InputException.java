package io.kvindex.cli;

/**
 * Bad input a user can fix (an unreadable file, a malformed value inside it). {@link Main} prints
 * the message as one line on stderr and exits with 1, without a stack trace, so the message must
 * say what is wrong and where. Thread-safe (immutable).
 */
public final class InputException extends RuntimeException {

  public InputException(String message) {
    super(message);
  }

  public InputException(String message, Throwable cause) {
    super(message, cause);
  }
}
