package io.kvindex.simulator.load;

import io.kvindex.common.KvIndexException;

/**
 * A trace line is not a Mooncake-format record; the message names the file, line and field. Fix the
 * trace. Thread-safe (immutable).
 */
public final class TraceFormatException extends KvIndexException {
  private static final long serialVersionUID = 1L;

  TraceFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
