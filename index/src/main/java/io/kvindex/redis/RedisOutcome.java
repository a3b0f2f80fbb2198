package io.kvindex.redis;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * The result of a Redis call that retries temporary errors: either {@link Done} with the reply, or
 * {@link Swallowed} when every attempt within the budget failed with a temporary error. Real errors
 * are not an outcome: they complete the call exceptionally. Immutable, thread-safe if the value is.
 *
 * @param <T> the reply type
 */
public sealed interface RedisOutcome<T> permits RedisOutcome.Done, RedisOutcome.Swallowed {

  /** True for {@link Done}. */
  boolean isDone();

  /** The reply, or {@code fallback} if the call was swallowed. */
  T orElse(T fallback);

  /** The reply; throws {@link RedisUnavailableException} if the call was swallowed. */
  T orElseThrow();

  /** Maps the reply of a {@link Done}; a {@link Swallowed} stays swallowed. */
  <R> RedisOutcome<R> map(Function<? super T, ? extends R> mapper);

  /**
   * The call succeeded.
   *
   * @param value the reply (null for a Lua nil/false)
   */
  record Done<T>(T value) implements RedisOutcome<T> {
    @Override
    public boolean isDone() {
      return true;
    }

    @Override
    public T orElse(T fallback) {
      return value;
    }

    @Override
    public T orElseThrow() {
      return value;
    }

    @Override
    public <R> RedisOutcome<R> map(Function<? super T, ? extends R> mapper) {
      return new Done<>(mapper.apply(value));
    }
  }

  /**
   * Every attempt failed with a temporary error; the call was given up and counted in {@code
   * kvindex.redis.swallowed}.
   *
   * @param operation the call's name
   * @param lastError the error of the last attempt
   * @param attempts how many attempts were made
   * @param elapsed time from the call to giving up
   */
  record Swallowed<T>(String operation, ClassifiedError lastError, int attempts, Duration elapsed)
      implements RedisOutcome<T> {

    public Swallowed {
      Objects.requireNonNull(operation, "operation");
      Objects.requireNonNull(lastError, "lastError");
      Objects.requireNonNull(elapsed, "elapsed");
    }

    @Override
    public boolean isDone() {
      return false;
    }

    @Override
    public T orElse(T fallback) {
      return fallback;
    }

    @Override
    public T orElseThrow() {
      throw exception();
    }

    @Override
    public <R> RedisOutcome<R> map(Function<? super T, ? extends R> mapper) {
      return new Swallowed<>(operation, lastError, attempts, elapsed);
    }

    /** This outcome as an exception, for callers that cannot go on without the reply. */
    public RedisUnavailableException exception() {
      return new RedisUnavailableException(operation, lastError, attempts, elapsed);
    }
  }
}
