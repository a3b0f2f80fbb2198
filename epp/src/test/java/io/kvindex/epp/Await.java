package io.kvindex.epp;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for a condition with a deadline; tests never sleep for a fixed time. */
final class Await {
  private Await() {}

  /** Polls {@code condition} every few milliseconds until it holds or 20 s pass. */
  static boolean until(BooleanSupplier condition) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return condition.getAsBoolean();
  }
}
