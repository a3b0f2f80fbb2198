package io.kvindex.wire;

/**
 * A ZeroMQ multipart message does not have the frame layout of vLLM's KV-event publisher or replay
 * socket: wrong frame count, a sequence frame that is not 8 bytes, a missing delimiter. Immutable.
 */
public final class MalformedFramesException extends WireFormatException {

  MalformedFramesException(String message) {
    super(message, null);
  }
}
