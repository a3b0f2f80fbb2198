package io.kvindex.index.redis;

import io.kvindex.common.Await;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Runs its tasks on the one thread that waits, in {@link #await}, for the future they lead to. A
 * blocking lookup hands it to the continuations of its Redis replies, so decoding runs on the
 * caller's thread instead of on lettuce's I/O thread, which every lookup of the process shares (and
 * which then only reads replies). Queue: {@value #CAPACITY} tasks (a lookup queues about one per
 * index group and turn); past that, or once the waiter has returned, a task runs on the thread that
 * submits it, as it would without this executor. A task that arrives while an interrupted waiter
 * leaves may never run: it only caches what the abandoned lookup learned. Thread-safe: any thread
 * submits, one awaits.
 */
final class WaitingThreadExecutor implements Executor {
  private static final int CAPACITY = 64;
  private static final Runnable WAKE = () -> {};

  private final BlockingQueue<Runnable> tasks = new ArrayBlockingQueue<>(CAPACITY);
  private volatile boolean waiting = true;

  @Override
  public void execute(Runnable task) {
    if (!waiting || !tasks.offer(task)) {
      task.run();
    }
  }

  /**
   * Runs the queued tasks until {@code result} is done, then returns its value as {@link Await#of}
   * does (an unchecked failure rethrown as it was; an interrupt restored and a {@link
   * CancellationException} thrown).
   */
  <T> T await(CompletableFuture<T> result) {
    // A failure can complete the result on another thread without a task queued here.
    result.whenComplete((value, error) -> tasks.offer(WAKE));
    try {
      while (!result.isDone()) {
        tasks.take().run();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result.cancel(false);
      throw new CancellationException("interrupted while waiting for Redis");
    } finally {
      waiting = false;
      for (Runnable left = tasks.poll(); left != null; left = tasks.poll()) {
        left.run();
      }
    }
    return Await.of(result);
  }
}
