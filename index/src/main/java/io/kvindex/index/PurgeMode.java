package io.kvindex.index;

/** Whether a purge keeps the stream's sequence watermark. Immutable and thread-safe. */
public enum PurgeMode {
  /**
   * The engine keeps counting (cleared cache, sleep, pod removal): later batches must follow on.
   */
  KEEP_WATERMARK,
  /**
   * The engine restarted or the gap cannot be replayed: the next batch's sequence number, whatever
   * it is, starts the stream afresh.
   */
  RESET_WATERMARK
}
