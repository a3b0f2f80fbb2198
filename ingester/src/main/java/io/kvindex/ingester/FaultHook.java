package io.kvindex.ingester;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Where fault drills step into an ingester: every background loop calls {@link #beforeWrite} before
 * it writes to Redis, and a write of several calls (a batch larger than one call's chunk) waits for
 * {@link #betweenChunks} between two of them. A hook that blocks there freezes the replica as a
 * process stopped (SIGSTOP) just before a write would be. The ingester uses {@link #NONE}, which
 * never waits, unless {@link Ingester#start(IngesterConfig, FaultHook)} is given another: only
 * tests and the lab's chaos harness do. Implementations are thread-safe.
 */
public interface FaultHook {
  /** The hook that never waits: what the ingester uses unless told otherwise. */
  FaultHook NONE = new FaultHook() {};

  /** Called by a background loop before it writes to Redis; may block. */
  default void beforeWrite() throws InterruptedException {}

  /**
   * What a write of several calls waits for between two of them, asked once per gap. Must not
   * block: the wait is the stage's.
   */
  default CompletionStage<?> betweenChunks() {
    return CompletableFuture.completedFuture(null);
  }

  /** The ingester is stopping: let go of every loop waiting in this hook. */
  default void release() {}

  /** {@link #beforeWrite}, keeping the interrupt flag if interrupted. */
  default void beforeWriteUninterruptibly() {
    try {
      beforeWrite();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
