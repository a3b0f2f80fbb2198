package io.kvindex.index.redis;

import io.kvindex.common.Await;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs its tasks on the one thread that waits, in {@link #await}, for the future they lead to. A
 * blocking lookup hands it to the continuations of its Redis replies, so decoding runs on the
 * caller's thread instead of on lettuce's I/O thread, which every lookup of the process shares (and
 * which then only reads replies). A lookup queues about one task per index group and turn, so the
 * queue is a lock-free one and the waiter parks between tasks; once the waiter has returned, a task
 * runs on the thread that submits it, as it would without this executor. A task that arrives while
 * the waiter leaves may never run: it only caches what the finished or abandoned lookup learned.
 * Thread-safe: any thread submits; the thread that made it awaits.
 */
final class WaitingThreadExecutor implements Executor {
  private final Thread waiter = Thread.currentThread();
  private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private volatile boolean waiting = true;

  @Override
  public void execute(Runnable task) {
    if (!waiting) {
      task.run();
      return;
    }
    tasks.offer(task);
    LockSupport.unpark(waiter);
  }

  /**
   * Runs the queued tasks until {@code result} is done, then returns its value as {@link Await#of}
   * does (an unchecked failure rethrown as it was; an interrupt restored and a {@link
   * CancellationException} thrown). Called by the thread that made this executor.
   */
  <T> T await(CompletableFuture<T> result) {
    // A failure can complete the result on another thread without a task queued here.
    result.whenComplete((value, error) -> LockSupport.unpark(waiter));
    try {
      while (!result.isDone()) {
        Runnable task = tasks.poll();
        if (task != null) {
          task.run();
          continue;
        }
        LockSupport.park(this);
        if (Thread.interrupted()) {
          Thread.currentThread().interrupt();
          result.cancel(false);
          throw new CancellationException("interrupted while waiting for Redis");
        }
      }
    } finally {
      waiting = false;
      for (Runnable left = tasks.poll(); left != null; left = tasks.poll()) {
        left.run();
      }
    }
    return Await.of(result);
  }
}
