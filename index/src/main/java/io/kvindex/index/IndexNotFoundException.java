package io.kvindex.index;

import io.kvindex.common.KvIndexException;

/**
 * The index is not in Redis, and this process may not create it (a router: only ingesters create an
 * index and load its scripts). The message says what to do. Immutable, thread-safe.
 */
public final class IndexNotFoundException extends KvIndexException {
  /** A missing index described by {@code message}, which says what to do. */
  public IndexNotFoundException(String message, Throwable cause) {
    super(message, cause);
  }
}
