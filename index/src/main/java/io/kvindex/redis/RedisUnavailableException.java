package io.kvindex.redis;

import io.kvindex.common.KvIndexException;
import java.time.Duration;

/**
 * A Redis call kept failing with temporary errors until its retry budget was spent. Redis is
 * unreachable, busy or failing over; it heals by itself, so callers usually count this and go on
 * (see {@link RedisOutcome.Swallowed#orElseThrow}). Immutable, thread-safe.
 */
public final class RedisUnavailableException extends KvIndexException {

  private final ClassifiedError lastError;
  private final int attempts;

  RedisUnavailableException(
      String operation, ClassifiedError lastError, int attempts, Duration elapsed) {
    super(
        "Redis call '"
            + operation
            + "' gave up after "
            + attempts
            + (attempts == 1 ? " attempt in " : " attempts in ")
            + elapsed.toMillis()
            + " ms, last error "
            + lastError.reason()
            + ": "
            + lastError.error().getMessage()
            + ". Redis is unreachable, busy or failing over; check the server if this persists",
        lastError.error());
    this.lastError = lastError;
    this.attempts = attempts;
  }

  /** The error of the last attempt. */
  public ClassifiedError lastError() {
    return lastError;
  }

  /** How many attempts were made. */
  public int attempts() {
    return attempts;
  }
}
