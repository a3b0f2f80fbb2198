package io.kvindex.index;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for a condition with a deadline (tests never sleep to wait). */
public final class Poll {
  private Poll() {}

  public static void until(BooleanSupplier condition) {
    until(condition, Duration.ofSeconds(10));
  }

  public static void until(BooleanSupplier condition, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within " + timeout);
      }
      Thread.onSpinWait();
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }
}
