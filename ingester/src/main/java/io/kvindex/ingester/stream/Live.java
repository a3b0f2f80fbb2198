package io.kvindex.ingester.stream;

/** What became of a live batch ({@link Sequencer#live}). */
public enum Live {
  /** Waiting in order to be applied. */
  QUEUED,
  /** Already applied, or already waiting: the publisher sent it twice. */
  DUPLICATE,
  /** Below the watermark and new: the engine restarted; a purge now comes first. */
  RESTART,
  /** The pending buffer is full: dropped, and replayed later as a gap. */
  DROPPED,
  /** The process's memory budget for live batches is spent: dropped, replayed later as a gap. */
  OVER_BUDGET
}
