package io.kvindex.ingester.stream;

import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

/**
 * The apply call an {@link EvictionModel}'s changes ride on: its events, built once for a range of
 * batches and sent again as they are until the call settles (a batch applied in chunks resumes on
 * the same events), what it carries of the model's changes, and the engine's stores held back from
 * it, by batch sequence and event position (a retry or a replay holds back the same event). Not
 * thread-safe.
 */
final class ModelCall {
  /** Engine stores held back, by batch sequence: their positions among the batch's events. */
  private final TreeMap<Long, Set<Integer>> heldBack = new TreeMap<>();

  private List<Long> stores = List.of();
  private Set<Long> removals = Set.of();
  private KvEventBatch built;
  private long first = -1;
  private long last = -1;

  /** The engine's store at {@code position} in batch {@code seq} is held back from its calls. */
  void holdBack(long seq, int position) {
    heldBack.computeIfAbsent(seq, k -> new HashSet<>()).add(position);
  }

  /** Whether a call is built and has not settled. */
  boolean inFlight() {
    return built != null;
  }

  /** The call built for exactly {@code parts}, not settled yet, or null. */
  KvEventBatch builtFor(List<Batch> parts) {
    boolean same = parts.get(0).seq() == first && parts.get(parts.size() - 1).seq() == last;
    return built != null && same ? built : null;
  }

  /** Builds the call for {@code parts}: their own events but those held back, then the changes. */
  KvEventBatch build(List<Batch> parts, ModelBlocks.Changes changes) {
    List<KvEvent> events = new ArrayList<>();
    for (Batch part : parts) {
      Set<Integer> back = heldBack.getOrDefault(part.seq(), Set.of());
      List<KvEvent> own = part.events().events();
      for (int i = 0; i < own.size(); i++) {
        if (!back.contains(i)) {
          events.add(own.get(i));
        }
      }
    }
    events.addAll(changes.events());
    stores = changes.stores();
    removals = changes.removals();
    KvEventBatch tail = parts.get(parts.size() - 1).events();
    built = KvEventBatch.of(tail.timestamp(), events, tail.dataParallelRank());
    first = parts.get(0).seq();
    last = parts.get(parts.size() - 1).seq();
    return built;
  }

  /** The blocks the last call built stores for the model. */
  List<Long> stores() {
    return stores;
  }

  /** The blocks the last call built removes for the model. */
  Set<Long> removals() {
    return removals;
  }

  /**
   * The call settled through {@code watermark}: what the index has applied is held back no more.
   */
  void settled(long watermark) {
    heldBack.headMap(watermark, true).clear();
    stores = List.of();
    removals = Set.of();
    built = null;
  }

  /** The stream was purged: nothing is held back, and no call is in flight. */
  void clear() {
    heldBack.clear();
    built = null;
  }
}
