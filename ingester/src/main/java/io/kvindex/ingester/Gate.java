package io.kvindex.ingester;

import java.util.concurrent.CountDownLatch;

/**
 * A gate background loops pass through before they write to Redis; closing it freezes them there,
 * as a process stopped just before a write would be. Tests use it to pause a replica past its
 * lease. Thread-safe.
 */
public final class Gate {
  private volatile CountDownLatch latch = new CountDownLatch(0);

  public void close() {
    if (latch.getCount() == 0) {
      latch = new CountDownLatch(1);
    }
  }

  public void open() {
    latch.countDown();
  }

  /** Waits while the gate is closed, keeping the interrupt flag if interrupted. */
  public void passUninterruptibly() {
    try {
      pass();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits while the gate is closed. */
  public void pass() throws InterruptedException {
    latch.await();
  }
}
