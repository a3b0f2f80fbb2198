package io.kvindex.ingester;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.LoggerFactory;

/** Polls a condition until a deadline; tests never sleep to wait. Thread-safe (stateless). */
public final class Await {
  private Await() {}

  /** Logs where every kvindex thread is, so that a wait that timed out shows who was stuck. */
  private static void logThreads() {
    StringBuilder dump = new StringBuilder("kvindex threads when the wait timed out:");
    Thread.getAllStackTraces()
        .forEach(
            (thread, stack) -> {
              if (thread.getName().startsWith("kvindex")) {
                dump.append('\n').append(thread.getName()).append(' ').append(thread.getState());
                for (StackTraceElement frame : stack) {
                  dump.append("\n    at ").append(frame);
                }
              }
            });
    LoggerFactory.getLogger(Await.class).warn(dump.toString());
  }

  public static void until(Duration timeout, String what, BooleanSupplier condition) {
    until(timeout, () -> what, condition);
  }

  public static void until(Duration timeout, Supplier<String> what, BooleanSupplier condition) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        logThreads();
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
