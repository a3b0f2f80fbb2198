package io.kvindex.ingester;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polls a condition until a deadline; tests never sleep to wait. Thread-safe (stateless). */
public final class Await {
  private Await() {}

  public static void until(Duration timeout, String what, BooleanSupplier condition) {
    until(timeout, () -> what, condition);
  }

  public static void until(Duration timeout, Supplier<String> what, BooleanSupplier condition) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        throw new AssertionError("timed out after " + timeout + " waiting for: " + what.get());
      }
      try {
        Thread.sleep(20); // a poll interval, not a wait for something
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }
}
