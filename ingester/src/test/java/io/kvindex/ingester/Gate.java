package io.kvindex.ingester;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

/**
 * A {@link FaultHook} that pauses: a gate background loops pass through before they write to Redis;
 * closing it freezes them there, as a process stopped just before a write would be. A write of
 * several calls (a batch larger than one call's chunk) waits for it between two of them. Tests and
 * the lab's chaos harness use it to pause a replica past its lease. Thread-safe.
 */
public final class Gate implements FaultHook {
  private volatile CountDownLatch latch = new CountDownLatch(0);
  private volatile CompletableFuture<Void> opened = CompletableFuture.completedFuture(null);
  private boolean closeBetweenChunks;

  public synchronized void close() {
    if (latch.getCount() == 0) {
      latch = new CountDownLatch(1);
      opened = new CompletableFuture<>();
    }
  }

  /** Opens the gate (and forgets a {@link #closeBetweenChunks} that has not closed it yet). */
  public synchronized void open() {
    closeBetweenChunks = false;
    latch.countDown();
    opened.complete(null);
  }

  /** Whether the gate is closed. */
  public boolean closed() {
    return latch.getCount() > 0;
  }

  /** Closes the gate when a write of several calls is next between two of them. */
  public synchronized void closeBetweenChunks() {
    closeBetweenChunks = true;
  }

  /**
   * What a write of several calls waits for between two of them: the gate open (closed first, when
   * {@link #closeBetweenChunks} asked for it). Never blocks.
   */
  @Override
  public synchronized CompletableFuture<Void> betweenChunks() {
    if (closeBetweenChunks) {
      closeBetweenChunks = false;
      close();
    }
    return opened;
  }

  /** Waits while the gate is closed. */
  @Override
  public void beforeWrite() throws InterruptedException {
    latch.await();
  }

  /** Opens the gate: the ingester is stopping. */
  @Override
  public void release() {
    open();
  }
}
