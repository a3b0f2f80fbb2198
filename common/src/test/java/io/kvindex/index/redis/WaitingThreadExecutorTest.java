package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The waiting thread runs the continuations; a failure wakes it; late tasks run inline. */
class WaitingThreadExecutorTest {
  @Test
  void await_continuationCompletedElsewhere_runsOnTheWaitingThread() {
    WaitingThreadExecutor executor = new WaitingThreadExecutor();
    CompletableFuture<String> reply = new CompletableFuture<>();
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    CompletableFuture<String> decoded =
        reply.thenApplyAsync(
            value -> {
              ranOn.set(Thread.currentThread());
              return value + " decoded";
            },
            executor);
    new Thread(() -> reply.complete("reply"), "io-thread").start();

    assertThat(executor.await(decoded)).isEqualTo("reply decoded");
    assertThat(ranOn.get()).isSameAs(Thread.currentThread());
  }

  @Test
  void await_failureCompletedElsewhere_wakesAndRethrows() {
    WaitingThreadExecutor executor = new WaitingThreadExecutor();
    CompletableFuture<String> reply = new CompletableFuture<>();
    CompletableFuture<String> decoded = reply.thenApplyAsync(value -> value, executor);
    new Thread(() -> reply.completeExceptionally(new IllegalStateException("real")), "io-thread")
        .start();

    assertThatThrownBy(() -> executor.await(decoded))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("real");
  }

  @Test
  void execute_afterTheWaiterReturned_runsOnTheSubmittingThread() {
    WaitingThreadExecutor executor = new WaitingThreadExecutor();
    executor.await(CompletableFuture.completedFuture("done"));
    AtomicReference<Thread> ranOn = new AtomicReference<>();

    executor.execute(() -> ranOn.set(Thread.currentThread()));

    assertThat(ranOn.get()).isSameAs(Thread.currentThread());
  }
}
