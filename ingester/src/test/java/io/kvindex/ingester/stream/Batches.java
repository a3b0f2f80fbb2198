package io.kvindex.ingester.stream;

import io.kvindex.event.KvEventBatch;

/** Batches made from decoded events, for tests. Stateless. */
final class Batches {
  private Batches() {}

  /** A decoded live batch. */
  static Batch live(long seq, KvEventBatch events) {
    return new Batch(seq, events.hashCode(), events, null, true, HeapBytes.of(events));
  }
}
