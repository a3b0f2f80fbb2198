package io.kvindex.index;

import io.kvindex.common.KvIndexException;

/**
 * The index in Redis is not one this process may use: it was created with another group count, or
 * in another index format (by a release that reads and writes the index differently). Retrying
 * cannot fix it; the message says which setting or release to change. Immutable, thread-safe.
 */
public final class IndexMismatchException extends KvIndexException {
  /** A mismatch described by {@code message}, which says what to do. */
  public IndexMismatchException(String message) {
    super(message);
  }
}
