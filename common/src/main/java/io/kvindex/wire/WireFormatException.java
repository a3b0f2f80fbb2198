package io.kvindex.wire;

/**
 * Bytes or frames received from a vLLM engine do not follow the KV-event wire format. A real error,
 * never a temporary one: the same input fails the same way every time. Immutable.
 */
public abstract sealed class WireFormatException extends RuntimeException
    permits MalformedEventException, MalformedFramesException {

  WireFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
