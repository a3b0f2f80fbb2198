package io.kvindex.redis;

import io.lettuce.core.RedisCommandTimeoutException;
import java.time.Duration;

/** The call's total time budget ran out while an attempt was still in flight. Immutable. */
final class DeadlineExceededException extends RedisCommandTimeoutException {

  DeadlineExceededException(Duration budget) {
    super("call budget of " + budget.toMillis() + " ms spent while waiting for Redis");
  }
}
