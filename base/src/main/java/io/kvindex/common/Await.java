package io.kvindex.common;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** Waits for a future and rethrows its failure as it was (unchecked). Thread-safe (stateless). */
public final class Await {
  private Await() {}

  /**
   * The future's value. An unchecked failure is rethrown as it was; if the caller is interrupted,
   * the interrupt flag is set again and a {@link CancellationException} thrown.
   */
  public static <T> T of(CompletableFuture<T> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      future.cancel(false);
      throw new CancellationException("interrupted while waiting for Redis");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause);
    }
  }
}
