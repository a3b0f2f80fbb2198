package io.kvindex.redis;

import io.github.resilience4j.core.IntervalFunction;
import io.github.resilience4j.core.functions.Either;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.kvindex.common.Check;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/*
 * Implementation notes.
 *
 * One resilience4j Retry serves every call. Per-call state (name, deadline, attempt count) travels
 * inside the failure: each attempt's error is wrapped in an AttemptFailure that carries its Call and
 * its classification. The retry predicate retries exactly the temporary ones; the interval function
 * draws the exponential random backoff and returns -1 ("stop", resilience4j >= 2.2) when the wait
 * would end past the call's deadline, so the total budget holds without a Retry per call.
 *
 * An attempt in flight is also bounded, by one task on the scheduler: it fails the attempt with a
 * DeadlineExceededException when the budget runs out, or, when an attempt timeout is set and comes
 * first, with a RedisCommandTimeoutException (temporary: retried while the budget lasts), as
 * lettuce's own command timeout would. The lettuce command is not cancelled; it completes later
 * and is ignored. That is safe because every kvindex call is idempotent. With an attempt timeout
 * the commands an attempt dispatches are marked (boundByCaller), and the connector's lettuce
 * timeout source gives them no timer of their own: one timer per attempt instead of one more per
 * command (on a cluster lookup, 16 commands).
 *
 * Pitfalls handled: the supplier is called again for each attempt and a throw becomes a failed
 * stage (resilience4j issue #1718 would otherwise hang the call); nothing here blocks, because the
 * first attempt's callbacks run on a lettuce I/O thread; once the scheduler is shut down no retry
 * is scheduled (a rejected schedule inside resilience4j would leave the call incomplete) and new
 * attempts fail as "closed": the scheduler's owner (the connector) is shutting down, and lettuce
 * past its own shutdown fails with exceptions that say nothing useful.
 *
 * READONLY is temporary for a bounded number of attempts (a demoted primary behind a fixed endpoint
 * heals only if the endpoint moves); when the budget is spent it surfaces as a real error instead
 * of being swallowed, because it is most likely a configuration error.
 */
final class ResilientRedisCalls implements RedisCalls {

  private static final Logger LOG = LoggerFactory.getLogger(ResilientRedisCalls.class);
  private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** Per thread: whether it is dispatching an attempt that this class bounds with a timer. */
  private static final ThreadLocal<boolean[]> BOUNDING =
      ThreadLocal.withInitial(() -> new boolean[1]);

  private final RetryPolicy policy;
  private final ScheduledExecutorService scheduler;
  private final RedisMetrics metrics;
  private final RedisErrorClassifier classifier;
  private final IntervalFunction backoff;
  private final Retry retry;
  private final AtomicLong lastWarnNanos = new AtomicLong(System.nanoTime() - WARN_INTERVAL_NANOS);
  private final Duration attemptTimeout;
  private final long attemptTimeoutNanos;

  /**
   * @param attemptTimeout the longest one attempt may wait, or null for no bound but the budget
   */
  ResilientRedisCalls(
      RetryPolicy policy,
      ScheduledExecutorService scheduler,
      RedisMetrics metrics,
      RedisErrorClassifier classifier,
      Duration attemptTimeout) {
    this.attemptTimeout = attemptTimeout;
    this.attemptTimeoutNanos = attemptTimeout == null ? Long.MAX_VALUE : attemptTimeout.toNanos();
    this.policy = policy;
    this.scheduler = scheduler;
    this.metrics = metrics;
    this.classifier = classifier;
    this.backoff =
        IntervalFunction.ofExponentialRandomBackoff(
            policy.initialBackoff(),
            policy.backoffMultiplier(),
            policy.randomization(),
            policy.maxBackoff());
    this.retry =
        Retry.of(
            "kvindex-redis",
            RetryConfig.custom()
                .maxAttempts(policy.maxAttempts())
                .intervalBiFunction(this::nextWaitMillis)
                .retryOnException(ResilientRedisCalls::isTemporaryAttempt)
                .build());
  }

  @Override
  public <T> CompletionStage<RedisOutcome<T>> call(
      String operation, Supplier<? extends CompletionStage<T>> command) {
    Check.notBlank(operation, "operation");
    Check.notNull(command, "command");
    Call call = new Call(operation, System.nanoTime(), policy.totalBudget());
    CompletableFuture<RedisOutcome<T>> outcome = new CompletableFuture<>();
    retry
        .executeCompletionStage(scheduler, () -> attempt(call, command))
        .whenComplete(
            (value, failure) -> {
              if (failure == null) {
                outcome.complete(new RedisOutcome.Done<>(value));
              } else {
                conclude(call, failure, outcome);
              }
            });
    return outcome;
  }

  @Override
  public <T> RedisOutcome<T> callAndWait(
      String operation, Supplier<? extends CompletionStage<T>> command) {
    CompletableFuture<RedisOutcome<T>> future = call(operation, command).toCompletableFuture();
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RedisRealException(
          operation, new ClassifiedError(RedisErrorClass.REAL, "interrupted", null, e));
    } catch (ExecutionException e) {
      Throwable cause = RedisErrorClassifier.unwrap(e);
      if (cause instanceof RedisRealException real) {
        if (real.reason().equals("interrupted")) {
          Thread.currentThread().interrupt();
        }
        throw real;
      }
      throw new RedisRealException(operation, classifier.classify(cause));
    }
  }

  @Override
  public RetryPolicy policy() {
    return policy;
  }

  @Override
  public RedisErrorClassifier classifier() {
    return classifier;
  }

  private <T> CompletionStage<T> attempt(
      Call call, Supplier<? extends CompletionStage<T>> command) {
    call.attempts.incrementAndGet();
    if (scheduler.isShutdown()) {
      return CompletableFuture.failedFuture(
          failure(call, new RedisException("Connection closed: the Redis connector is closed")));
    }
    long remainingNanos = call.deadlineNanos - System.nanoTime();
    if (remainingNanos <= 0) {
      return CompletableFuture.failedFuture(
          failure(call, new DeadlineExceededException(call.budget)));
    }
    CompletableFuture<T> result = new CompletableFuture<>();
    ScheduledFuture<?> timer = deadlineTimer(call, result, remainingNanos);
    CompletionStage<T> stage = dispatch(command, timer != null && attemptTimeout != null);
    stage.whenComplete(
        (value, error) -> {
          if (timer != null) {
            timer.cancel(false);
          }
          if (error == null) {
            result.complete(value);
          } else {
            result.completeExceptionally(failure(call, error));
          }
        });
    return result;
  }

  /**
   * Fails {@code result} when the budget runs out, or at the attempt timeout if that comes first
   * (the exception made only then: most attempts are answered in time).
   */
  private ScheduledFuture<?> deadlineTimer(
      Call call, CompletableFuture<?> result, long remainingNanos) {
    boolean budgetFirst = remainingNanos <= attemptTimeoutNanos;
    try {
      return scheduler.schedule(
          () ->
              result.completeExceptionally(
                  failure(
                      call,
                      budgetFirst
                          ? new DeadlineExceededException(call.budget)
                          : new RedisCommandTimeoutException(
                              "Command timed out after " + attemptTimeout))),
          budgetFirst ? remainingNanos : attemptTimeoutNanos,
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      return null; // shutting down: the commands keep lettuce's own command timeout
    }
  }

  /**
   * Runs the supplier (a throw becomes a failed stage); when {@code bounded}, the commands it
   * dispatches on this thread are marked as bounded by this attempt's timer.
   */
  private static <T> CompletionStage<T> dispatch(
      Supplier<? extends CompletionStage<T>> command, boolean bounded) {
    if (!bounded) {
      return supply(command);
    }
    boolean[] bounding = BOUNDING.get();
    boolean outer = bounding[0];
    bounding[0] = true;
    try {
      return supply(command);
    } finally {
      bounding[0] = outer;
    }
  }

  private static <T> CompletionStage<T> supply(Supplier<? extends CompletionStage<T>> command) {
    try {
      return Check.notNull(command.get(), "the stage returned by the command supplier");
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Whether the calling thread is dispatching the commands of an attempt that a timer of this class
   * bounds: lettuce need not time them out as well.
   */
  static boolean boundByCaller() {
    return BOUNDING.get()[0];
  }

  private AttemptFailure failure(Call call, Throwable error) {
    return new AttemptFailure(call, classifier.classify(error));
  }

  private static boolean isTemporaryAttempt(Throwable error) {
    return RedisErrorClassifier.unwrap(error) instanceof AttemptFailure failure
        && failure.error.isTemporary();
  }

  private Long nextWaitMillis(Integer attempt, Either<Throwable, Object> result) {
    if (!result.isLeft()
        || !(RedisErrorClassifier.unwrap(result.getLeft()) instanceof AttemptFailure failure)
        || scheduler.isShutdown()) {
      return -1L;
    }
    long waitMillis = backoff.apply(attempt);
    long remainingMillis =
        TimeUnit.NANOSECONDS.toMillis(failure.call.deadlineNanos - System.nanoTime());
    if (waitMillis >= remainingMillis) {
      return -1L;
    }
    metrics.retry(failure.call.operation, failure.error.reason());
    return waitMillis;
  }

  private <T> void conclude(
      Call call, Throwable failure, CompletableFuture<RedisOutcome<T>> outcome) {
    Throwable unwrapped = RedisErrorClassifier.unwrap(failure);
    ClassifiedError error =
        unwrapped instanceof AttemptFailure attempt
            ? attempt.error
            : classifier.classify(unwrapped);
    if (error.isTemporary() && !error.reason().equals("readonly")) {
      outcome.complete(swallow(call, error));
    } else {
      metrics.error(call.operation, error.reason());
      outcome.completeExceptionally(typed(call.operation, error));
    }
  }

  private <T> RedisOutcome<T> swallow(Call call, ClassifiedError error) {
    metrics.swallowed(call.operation, error.reason());
    Duration elapsed = Duration.ofNanos(System.nanoTime() - call.startNanos);
    RedisOutcome.Swallowed<T> swallowed =
        new RedisOutcome.Swallowed<>(call.operation, error, call.attempts.get(), elapsed);
    warnAtMostEvery10s(swallowed);
    return swallowed;
  }

  private void warnAtMostEvery10s(RedisOutcome.Swallowed<?> swallowed) {
    long now = System.nanoTime();
    long last = lastWarnNanos.get();
    if (now - last >= WARN_INTERVAL_NANOS && lastWarnNanos.compareAndSet(last, now)) {
      LOG.warn(
          "{} (further ones within 10 s only counted in {})",
          swallowed.exception().getMessage(),
          RedisMetrics.SWALLOWED);
    }
  }

  static RedisRealException typed(String operation, ClassifiedError error) {
    if (error.error() instanceof RedisRealException real) {
      return real;
    }
    if (error.reason().equals("oom")) {
      return new IndexCapacityException(operation, error);
    }
    if (error.reason().startsWith(StandardErrorClassifier.SCRIPT_CODE_PREFIX)) {
      return new ScriptRejectedException(operation, error);
    }
    return new RedisRealException(operation, error);
  }

  /** One call's state, shared by its attempts (which never overlap). */
  private static final class Call {
    final String operation;
    final long startNanos;
    final long deadlineNanos;
    final Duration budget;
    final AtomicInteger attempts = new AtomicInteger();

    Call(String operation, long startNanos, Duration budget) {
      this.operation = operation;
      this.startNanos = startNanos;
      this.deadlineNanos = startNanos + budget.toNanos();
      this.budget = budget;
    }
  }

  /** An attempt's error with its call and classification; never leaves this class. */
  private static final class AttemptFailure extends RuntimeException {
    final transient Call call;
    final transient ClassifiedError error;

    AttemptFailure(Call call, ClassifiedError error) {
      super(error.reason(), error.error(), false, false);
      this.call = call;
      this.error = error;
    }
  }
}
