package io.kvindex.simulator;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.simulator.engine.Engine;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Records an engine's published batches and applies them to plain per-tier sets. */
final class Recorder implements Engine.BatchListener {
  final List<Long> seqs = new ArrayList<>();
  final List<KvEventBatch> batches = new ArrayList<>();
  final List<byte[]> payloads = new ArrayList<>();
  final Map<String, Set<Long>> applied = new TreeMap<>();

  @Override
  public synchronized void published(long seq, KvEventBatch batch, byte[] payload) {
    seqs.add(seq);
    batches.add(batch);
    payloads.add(payload);
    apply(applied, batch);
  }

  static void apply(Map<String, Set<Long>> tiers, KvEventBatch batch) {
    for (KvEvent event : batch.events()) {
      if (event instanceof BlockStored s) {
        tiers.computeIfAbsent(s.tier(), t -> new HashSet<>()).addAll(s.blockHashes());
      } else if (event instanceof BlockRemoved r) {
        tiers.computeIfAbsent(r.tier(), t -> new HashSet<>()).removeAll(r.blockHashes());
      } else if (event instanceof AllBlocksCleared) {
        tiers.values().forEach(Set::clear);
      }
    }
  }

  synchronized Set<Long> applied(String tier) {
    return new HashSet<>(applied.getOrDefault(tier, Set.of()));
  }

  synchronized List<KvEvent> lastEvents() {
    return batches.get(batches.size() - 1).events();
  }

  synchronized int size() {
    return batches.size();
  }
}
