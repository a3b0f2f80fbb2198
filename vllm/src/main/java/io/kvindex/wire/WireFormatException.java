package io.kvindex.wire;

import io.kvindex.common.KvIndexException;

/**
 * Bytes or frames received from a vLLM engine do not follow the KV-event wire format. A real error,
 * never a temporary one: the same input fails the same way every time, so retrying cannot help.
 * Immutable, thread-safe.
 */
public abstract sealed class WireFormatException extends KvIndexException
    permits MalformedEventException, MalformedFramesException {

  WireFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
