package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisBusyException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisReadOnlyException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RedisCallsTest {

  private static final RetryPolicy FAST =
      RetryPolicy.builder()
          .maxAttempts(5)
          .initialBackoff(Duration.ofMillis(1))
          .maxBackoff(Duration.ofMillis(2))
          .totalBudget(Duration.ofSeconds(5))
          .build();

  private final ScheduledExecutorService scheduler = RedisCalls.newScheduler("test-scheduler");
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @AfterEach
  void shutDown() {
    scheduler.shutdownNow();
  }

  private RedisCalls calls(RetryPolicy policy) {
    return RedisCalls.builder().policy(policy).scheduler(scheduler).meterRegistry(registry).build();
  }

  /** Fails with the given errors in turn, then answers "ok"; counts its calls. */
  private static final class Script implements Supplier<CompletionStage<String>> {
    final Queue<RuntimeException> failures;
    final AtomicInteger calls = new AtomicInteger();
    final boolean throwInsteadOfFailing;

    Script(boolean throwInsteadOfFailing, RuntimeException... failures) {
      this.failures = new ArrayDeque<>(List.of(failures));
      this.throwInsteadOfFailing = throwInsteadOfFailing;
    }

    Script(RuntimeException... failures) {
      this(false, failures);
    }

    @Override
    public CompletionStage<String> get() {
      calls.incrementAndGet();
      RuntimeException failure = failures.poll();
      if (failure == null) {
        return CompletableFuture.completedFuture("ok");
      }
      if (throwInsteadOfFailing) {
        throw failure;
      }
      return CompletableFuture.failedFuture(failure);
    }
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static Throwable failureOf(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError("stage did not fail in time", e);
    }
    throw new AssertionError("stage succeeded, expected a failure");
  }

  private double count(String name, String tag, String value) {
    return registry.find(name).tag(tag, value).counters().stream()
        .mapToDouble(c -> c.count())
        .sum();
  }

  @Test
  void call_succeedsAfterTemporaryFailures() throws Exception {
    Script script =
        new Script(
            new RedisConnectionException("Unable to connect to 127.0.0.1:1"),
            new RedisBusyException("BUSY Redis is busy running a script."),
            new RedisCommandTimeoutException("Command timed out after 2 second(s)"));

    RedisOutcome<String> outcome = await(calls(FAST).call("apply", script));

    assertThat(outcome).isEqualTo(new RedisOutcome.Done<>("ok"));
    assertThat(script.calls).hasValue(4);
    assertThat(count(RedisMetrics.RETRIES, "operation", "apply")).isEqualTo(3);
    assertThat(count(RedisMetrics.RETRIES, "reason", "busy")).isEqualTo(1);
    assertThat(count(RedisMetrics.SWALLOWED, "operation", "apply")).isZero();
  }

  @Test
  void call_swallowsWhenAttemptsRunOut() throws Exception {
    RedisException notConnected =
        new RedisException("Currently not connected. Commands are rejected.");
    Script script = new Script(notConnected, notConnected, notConnected, notConnected);

    RedisOutcome<String> outcome =
        await(calls(FAST.toBuilder().maxAttempts(3).build()).call("lookup", script));

    assertThat(outcome).isInstanceOf(RedisOutcome.Swallowed.class);
    RedisOutcome.Swallowed<String> swallowed = (RedisOutcome.Swallowed<String>) outcome;
    assertThat(swallowed.attempts()).isEqualTo(3);
    assertThat(swallowed.lastError().reason()).isEqualTo("not_connected");
    assertThat(swallowed.lastError().error()).isSameAs(notConnected);
    assertThat(script.calls).hasValue(3);
    assertThat(count(RedisMetrics.SWALLOWED, "reason", "not_connected")).isEqualTo(1);
    assertThat(outcome.orElse("fallback")).isEqualTo("fallback");
    assertThatThrownBy(outcome::orElseThrow)
        .isInstanceOf(RedisUnavailableException.class)
        .hasMessageContaining("'lookup' gave up after 3 attempts")
        .hasCause(notConnected);
  }

  @Test
  void call_swallowsWhenBudgetSpent() throws Exception {
    RetryPolicy policy =
        FAST.toBuilder()
            .maxAttempts(1_000)
            .initialBackoff(Duration.ofMillis(5))
            .maxBackoff(Duration.ofMillis(5))
            .randomization(0)
            .totalBudget(Duration.ofMillis(60))
            .build();
    Supplier<CompletionStage<String>> alwaysRefused =
        () -> CompletableFuture.failedFuture(new RedisConnectionException("refused"));

    RedisOutcome<String> outcome = await(calls(policy).call("lookup", alwaysRefused));

    assertThat(outcome.isDone()).isFalse();
    RedisOutcome.Swallowed<String> swallowed = (RedisOutcome.Swallowed<String>) outcome;
    // 60 ms of 5 ms waits: the budget, not the 1 000 attempts, ended it
    assertThat(swallowed.attempts()).isBetween(2, 13);
    assertThat(count(RedisMetrics.SWALLOWED, "operation", "lookup")).isEqualTo(1);
  }

  @Test
  void call_budgetBoundsAHangingAttempt() throws Exception {
    RetryPolicy policy = FAST.toBuilder().totalBudget(Duration.ofMillis(30)).build();
    Supplier<CompletionStage<String>> hangs = CompletableFuture::new;

    RedisOutcome<String> outcome = await(calls(policy).call("lookup", hangs));

    RedisOutcome.Swallowed<String> swallowed = (RedisOutcome.Swallowed<String>) outcome;
    assertThat(swallowed.lastError().reason()).isEqualTo("deadline");
    assertThat(swallowed.attempts()).isEqualTo(1);
  }

  @Test
  void call_realErrorFailsAtOnceWithoutRetry() {
    RedisCommandExecutionException wrongType =
        new RedisCommandExecutionException(
            "WRONGTYPE Operation against a key holding the wrong kind of value");
    Script script = new Script(wrongType);

    Throwable failure = failureOf(calls(FAST).call("apply", script));

    assertThat(failure)
        .isExactlyInstanceOf(RedisRealException.class)
        .hasMessageContaining("'apply' failed (wrongtype)")
        .hasCause(wrongType);
    assertThat(((RedisRealException) failure).code()).isEqualTo("WRONGTYPE");
    assertThat(script.calls).hasValue(1);
    assertThat(count(RedisMetrics.ERRORS, "reason", "wrongtype")).isEqualTo(1);
    assertThat(count(RedisMetrics.RETRIES, "operation", "apply")).isZero();
  }

  @Test
  void call_oomIsCapacityError() {
    Script script =
        new Script(
            new RedisCommandExecutionException(
                "OOM command not allowed when used memory > 'maxmemory'."));

    Throwable failure = failureOf(calls(FAST).call("apply", script));

    assertThat(failure)
        .isInstanceOf(IndexCapacityException.class)
        .hasMessageContaining("raise maxmemory or add shards")
        .hasMessageContaining("noeviction");
    assertThat(script.calls).hasValue(1);
  }

  @Test
  void call_oomRetriedWhenConfiguredTemporary() throws Exception {
    RedisCalls calls =
        RedisCalls.builder()
            .policy(FAST)
            .scheduler(scheduler)
            .meterRegistry(registry)
            .classifier(RedisErrorClassifier.of(true))
            .build();
    Script script =
        new Script(new RedisCommandExecutionException("OOM command not allowed when used memory"));

    assertThat(await(calls.call("apply", script)).orElseThrow()).isEqualTo("ok");
    assertThat(script.calls).hasValue(2);
  }

  @Test
  void call_ownScriptCodeIsScriptRejected() {
    Script script =
        new Script(new RedisCommandExecutionException("KVINDEX_FENCED lease token 4 is stale"));

    Throwable failure = failureOf(calls(FAST).call("apply", script));

    assertThat(failure).isInstanceOf(ScriptRejectedException.class);
    ScriptRejectedException rejected = (ScriptRejectedException) failure;
    assertThat(rejected.code()).isEqualTo("KVINDEX_FENCED");
    assertThat(rejected.reason()).isEqualTo("KVINDEX_FENCED");
    assertThat(rejected.detail()).isEqualTo("lease token 4 is stale");
  }

  @Test
  void call_supplierThrowingCountsAsFailedAttempt() throws Exception {
    // A throw on a retry attempt (not only the first) must not hang the call (resilience4j #1718).
    Script script =
        new Script(
            true,
            new RedisException("Currently not connected. Commands are rejected."),
            new RedisException("Currently not connected. Commands are rejected."));

    assertThat(await(calls(FAST).call("apply", script)).orElseThrow()).isEqualTo("ok");
    assertThat(script.calls).hasValue(3);
  }

  @Test
  void call_supplierThrowingRealErrorFails() {
    Script script = new Script(true, new IllegalStateException("bug in the caller"));

    assertThat(failureOf(calls(FAST).call("apply", script)))
        .isInstanceOf(RedisRealException.class)
        .hasRootCauseMessage("bug in the caller");
  }

  @Test
  void call_readOnlySurfacesWhenBudgetSpent() {
    RedisReadOnlyException readOnly =
        new RedisReadOnlyException("READONLY You can't write against a read only replica.");
    Script script = new Script(readOnly, readOnly, readOnly, readOnly, readOnly, readOnly);

    Throwable failure = failureOf(calls(FAST).call("apply", script));

    assertThat(failure).isInstanceOf(RedisRealException.class).hasMessageContaining("primary");
    assertThat(script.calls).hasValue(5);
  }

  @Test
  void call_noScriptOutsideScriptRunnerIsReal() {
    Script script = new Script(new RedisNoScriptException("NOSCRIPT No matching script."));

    Throwable failure = failureOf(calls(FAST).call("apply", script));

    assertThat(failure).isInstanceOf(RedisRealException.class);
    assertThat(((RedisRealException) failure).reason()).isEqualTo("noscript");
    assertThat(script.calls).hasValue(1);
  }

  @Test
  void callAndWait_returnsOutcome() {
    Script script = new Script(new RedisCommandTimeoutException("timed out"));

    assertThat(calls(FAST).callAndWait("apply", script).orElseThrow()).isEqualTo("ok");
  }

  @Test
  void callAndWait_throwsTypedRealError() {
    Script script = new Script(new RedisCommandExecutionException("CROSSSLOT Keys in request"));

    assertThatThrownBy(() -> calls(FAST).callAndWait("apply", script))
        .isInstanceOf(RedisRealException.class)
        .hasMessageContaining("crossslot");
  }

  @Test
  void callAndWait_interruptedRestoresInterruptFlag() {
    Supplier<CompletionStage<String>> hangs = CompletableFuture::new;
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> calls(FAST).callAndWait("apply", hangs))
          .isInstanceOf(RedisRealException.class)
          .hasMessageContaining("interrupted");
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void call_afterSchedulerShutdownFailsAsClosed() {
    RedisCalls calls = calls(FAST);
    scheduler.shutdown();
    Script script = new Script();

    Throwable failure = failureOf(calls.call("apply", script));

    assertThat(failure).isInstanceOf(RedisRealException.class);
    assertThat(((RedisRealException) failure).reason()).isEqualTo("closed");
    assertThat(script.calls).hasValue(0);
  }

  @Test
  void call_schedulerShutDownWhileWaitingDoesNotHang() throws Exception {
    RedisCalls calls = calls(FAST);
    CompletableFuture<String> first = new CompletableFuture<>();
    AtomicInteger attempts = new AtomicInteger();
    CompletionStage<RedisOutcome<String>> outcome =
        calls.call(
            "apply",
            () ->
                attempts.incrementAndGet() == 1 ? first : CompletableFuture.completedFuture("ok"));

    scheduler.shutdown();
    first.completeExceptionally(new RedisConnectionException("refused"));

    assertThat(await(outcome).isDone()).isFalse();
    assertThat(attempts).hasValue(1);
  }

  @Test
  void call_nullValueIsDone() throws Exception {
    RedisOutcome<String> outcome =
        await(calls(FAST).call("lookup", () -> CompletableFuture.completedFuture(null)));

    assertThat(outcome.isDone()).isTrue();
    assertThat(outcome.orElse("fallback")).isNull();
  }

  @Test
  void call_blankOperationRejected() {
    assertThatThrownBy(() -> calls(FAST).call(" ", () -> CompletableFuture.completedFuture(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operation");
  }

  @Test
  void build_withoutSchedulerRejected() {
    assertThatThrownBy(() -> RedisCalls.builder().build())
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("scheduler");
  }
}
