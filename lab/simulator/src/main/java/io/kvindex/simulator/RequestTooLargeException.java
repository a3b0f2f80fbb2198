package io.kvindex.simulator;

import io.kvindex.common.KvIndexException;

/**
 * The request needs more KV blocks than the engine has; vLLM rejects such requests too. Use a
 * shorter request or a pod with more {@code capacityBlocks}. Thread-safe (immutable).
 */
public final class RequestTooLargeException extends KvIndexException {
  private static final long serialVersionUID = 1L;

  public RequestTooLargeException(String message) {
    super(message);
  }
}
