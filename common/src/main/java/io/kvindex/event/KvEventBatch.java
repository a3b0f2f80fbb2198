package io.kvindex.event;

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

  /** A batch with nothing skipped. */
  public static KvEventBatch of(double timestamp, List<KvEvent> events, Integer dataParallelRank) {
    return new KvEventBatch(timestamp, events, dataParallelRank, List.of());
  }
}
