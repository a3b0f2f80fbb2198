package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
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

  @Test
  void await_interrupted_cancelsKeepsTheInterruptAndSaysSo() throws Exception {
    CompletableFuture<String> never = new CompletableFuture<>();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
    Thread waiter =
        new Thread(
            () -> {
              try {
                new WaitingThreadExecutor().await(never);
              } catch (RuntimeException e) {
                thrown.set(e);
                stillInterrupted.set(Thread.currentThread().isInterrupted());
              }
            },
            "waiter");
    waiter.start();
    while (waiter.getState() != Thread.State.WAITING) {
      Thread.onSpinWait();
    }
    waiter.interrupt();
    waiter.join(10_000);

    assertThat(thrown.get())
        .isInstanceOf(CancellationException.class)
        .hasMessageContaining("interrupted");
    assertThat(stillInterrupted.get()).isTrue();
    assertThat(never).isCancelled();
  }

  @Test
  void await_manyTasksFromManyThreads_runsEveryOneOnTheWaiter() throws Exception {
    WaitingThreadExecutor executor = new WaitingThreadExecutor();
    int tasks = 200;
    AtomicInteger ranHere = new AtomicInteger();
    CountDownLatch submitted = new CountDownLatch(tasks);
    CompletableFuture<Void> all = new CompletableFuture<>();
    Thread self = Thread.currentThread();
    for (int t = 0; t < 4; t++) {
      new Thread(
              () -> {
                for (int i = 0; i < tasks / 4; i++) {
                  executor.execute(
                      () -> {
                        if (Thread.currentThread() == self) {
                          ranHere.incrementAndGet();
                        }
                      });
                  submitted.countDown();
                }
              },
              "io-" + t)
          .start();
    }
    new Thread(
            () -> {
              try {
                submitted.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              executor.execute(() -> all.complete(null));
            },
            "io-last")
        .start();

    executor.await(all);

    assertThat(ranHere).hasValue(tasks);
  }
}
