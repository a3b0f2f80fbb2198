package io.kvindex.ingester.stream;

/**
 * An engine's sleep, level-triggered: while the engine says it sleeps, the index holds nothing of
 * it whatever arrives; batches from before the sleep (buffered, replayed, caught up) are applied
 * without their events, so the watermark moves and no block the engine dropped comes back. A live
 * batch newer than everything seen before the sleep shows the engine awake again. Not thread-safe:
 * one worker thread drives it.
 */
final class EngineSleep {
  private boolean asleep;

  /** The newest sequence seen when the engine fell asleep. */
  private long after = -1;

  /**
   * The sleep state as the engine's {@code /metrics} said at the last scrape; {@code newestSeen}:
   * the newest sequence the stream has seen. Returns whether the engine just fell asleep.
   */
  boolean report(boolean nowAsleep, long newestSeen) {
    boolean fell = nowAsleep && !asleep;
    if (fell) {
      after = newestSeen;
    }
    asleep = nowAsleep;
    return fell;
  }

  /**
   * A batch as it may be applied: while the engine sleeps, one from before the sleep (or from the
   * replay ring) without its events; a live batch newer than the sleep shows the engine awake.
   */
  Batch asApplied(Batch batch) {
    if (!asleep) {
      return batch;
    }
    if (batch.live() && batch.seq() > after) {
      asleep = false; // the engine publishes again: it is awake, whatever the last scrape said
      return batch;
    }
    return batch.emptied();
  }
}
