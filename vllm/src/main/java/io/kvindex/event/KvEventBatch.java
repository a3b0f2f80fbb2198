package io.kvindex.event;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One published batch: the events of one engine step.
 *
 * @param timestamp Unix seconds (float64 on the wire)
 * @param events the decoded events, in wire order
 * @param dataParallelRank the publisher's data-parallel rank, or {@code null} (v0.9.0, or nil)
 * @param skippedTags tags of events this decoder does not know and skipped, in wire order
 */
public record KvEventBatch(
    double timestamp, List<KvEvent> events, Integer dataParallelRank, List<String> skippedTags) {

  public KvEventBatch {
    events = List.copyOf(Objects.requireNonNull(events, "events"));
    skippedTags = List.copyOf(Objects.requireNonNull(skippedTags, "skippedTags"));
  }

  /**
   * Consecutive batches of one stream as one: their events in order, the last one's timestamp and
   * rank (what an apply of several batches in one call writes). One batch is returned as it is.
   *
   * @throws IllegalArgumentException if {@code parts} is empty
   */
  public static KvEventBatch concat(List<KvEventBatch> parts) {
    if (parts.isEmpty()) {
      throw new IllegalArgumentException("no batches to concatenate");
    }
    KvEventBatch last = parts.get(parts.size() - 1);
    if (parts.size() == 1) {
      return last;
    }
    List<KvEvent> events = new ArrayList<>();
    parts.forEach(b -> events.addAll(b.events()));
    return of(last.timestamp(), events, last.dataParallelRank());
  }

  /** A batch with nothing skipped. */
  public static KvEventBatch of(double timestamp, List<KvEvent> events, Integer dataParallelRank) {
    return new KvEventBatch(timestamp, events, dataParallelRank, List.of());
  }
}
