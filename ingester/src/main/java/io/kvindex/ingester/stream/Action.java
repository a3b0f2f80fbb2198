package io.kvindex.ingester.stream;

import java.util.List;

/**
 * The next thing a stream must do, as its {@link Sequencer} asks for it; the {@link StreamWorker}
 * carries it out and reports what Redis or the replay socket answered. Immutable; thread-safe.
 */
public sealed interface Action
    permits Action.Idle, Action.RunPurge, Action.Apply, Action.RepairGap, Action.Publish {

  /** Nothing to do until something arrives. */
  record Idle() implements Action {}

  /** Purge the stream before anything else; report with {@link Sequencer#purged}. */
  record RunPurge(Purge purge) implements Action {}

  /**
   * Apply this batch, the stream's next; report with {@link Sequencer#applied}. {@code staged}:
   * history replayed while the stream is rebuilt, kept from lookups until {@link Publish}. When the
   * stream is behind, {@code batch} is several consecutive batches ({@code parts}, in order) as
   * one: their events in order, the last one's sequence, applied in one call ({@link ApplyMerger}),
   * which counted what they weigh against the call's chunk ({@code runBlocks}; 0 for one batch).
   */
  record Apply(Batch batch, boolean staged, List<Batch> parts, long runBlocks) implements Action {
    public Apply {
      parts = List.copyOf(parts);
    }

    /** One batch alone (split into as many apply calls as it needs: no run to count). */
    public Apply(Batch batch, boolean staged) {
      this(batch, staged, List.of(batch), 0);
    }

    /** The first batch's sequence ({@code batch.seq()} is the last's). */
    public long firstSeq() {
      return parts.get(0).seq();
    }
  }

  /**
   * The replayed history is applied: show it to lookups (the pod looked cold while it was rebuilt).
   * Report with {@link Sequencer#published}.
   */
  record Publish() implements Action {}

  /**
   * Ask the pod's replay socket for every batch from {@code from}: sequences up to {@code firstLive
   * - 1} are missing, or (when {@code malformed}) batch {@code from} arrived live but could not be
   * read, and the ring's copy may be intact. Report with {@link Sequencer#replayed} (or {@link
   * Sequencer#noReplay}).
   */
  record RepairGap(long from, long firstLive, boolean malformed) implements Action {}
}
