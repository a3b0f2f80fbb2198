package io.kvindex.redis;

import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;

/**
 * Runs Redis calls under a {@link RetryPolicy}: temporary errors are retried with jittered
 * exponential backoff (resilience4j-retry) within the policy's total budget, then swallowed and
 * counted; real errors fail the call at once with a typed {@link RedisRealException} (an {@link
 * IndexCapacityException} for OOM, a {@link ScriptRejectedException} for our own script codes).
 *
 * <p>Every attempt calls the supplier again, so it must send a new command each time (never return
 * a stored future). Calls must be idempotent: a command that timed out may still have run.
 *
 * <p>Metrics (on the given registry, default {@link Metrics#globalRegistry}): {@code
 * kvindex.redis.retries{operation,reason}}, {@code kvindex.redis.swallowed{operation,reason}},
 * {@code kvindex.redis.errors{operation,reason}}.
 *
 * <p>Thread-safe; one instance serves any number of concurrent calls.
 */
public interface RedisCalls {

  /**
   * Runs {@code command} with retries. The stage completes with {@link RedisOutcome.Done} or {@link
   * RedisOutcome.Swallowed}, or exceptionally with a {@link RedisRealException}. It never blocks;
   * completion may happen on a lettuce I/O thread, so do not block in its callbacks.
   *
   * @param operation a short, fixed name for logs and metric tags ({@code "apply"}, {@code
   *     "lookup"}), not a value with unbounded cardinality
   * @param command sends one new command per call; a throw counts as a failed attempt
   */
  <T> CompletionStage<RedisOutcome<T>> call(
      String operation, Supplier<? extends CompletionStage<T>> command);

  /**
   * Blocking form of {@link #call}: waits for the outcome on the calling thread. Throws the typed
   * {@link RedisRealException} for real errors; if interrupted, sets the interrupt flag again and
   * throws a {@link RedisRealException} with reason {@code interrupted}.
   */
  <T> RedisOutcome<T> callAndWait(String operation, Supplier<? extends CompletionStage<T>> command);

  /** The policy calls run under. */
  RetryPolicy policy();

  /** The classifier that decides what is temporary. */
  RedisErrorClassifier classifier();

  /** A builder; {@link Builder#scheduler} is required. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * A scheduler for retry waits and call deadlines: one daemon thread named {@code name}, cancelled
   * tasks removed at once. The caller owns it and shuts it down after its last call; calls made
   * after that fail with a {@link RedisRealException} (reason {@code closed}).
   */
  static ScheduledExecutorService newScheduler(String name) {
    return Threads.scheduled(Check.notBlank(name, "name"), 1);
  }

  /** Builds {@link RedisCalls}. Not thread-safe. */
  final class Builder {
    private RetryPolicy policy = RetryPolicy.defaults();
    private ScheduledExecutorService scheduler;
    private MeterRegistry meterRegistry = Metrics.globalRegistry;
    private RedisErrorClassifier classifier = RedisErrorClassifier.standard();

    private Builder() {}

    /** Default {@link RetryPolicy#defaults()}. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Check.notNull(policy, "policy");
      return this;
    }

    /**
     * Runs retry waits and deadlines; required. Its tasks never block. See {@link #newScheduler}.
     */
    public Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Check.notNull(scheduler, "scheduler");
      return this;
    }

    /** Where the counters go. Default {@link Metrics#globalRegistry}. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meterRegistry = Check.notNull(meterRegistry, "meterRegistry");
      return this;
    }

    /** Default {@link RedisErrorClassifier#standard()}. */
    public Builder classifier(RedisErrorClassifier classifier) {
      this.classifier = Check.notNull(classifier, "classifier");
      return this;
    }

    public RedisCalls build() {
      Check.notNull(scheduler, "scheduler");
      return new ResilientRedisCalls(
          policy, scheduler, new RedisMetrics(meterRegistry), classifier, null);
    }
  }
}
