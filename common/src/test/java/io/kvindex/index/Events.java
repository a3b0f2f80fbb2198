package io.kvindex.index;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;

/** Terse event builders for index tests. */
final class Events {
  private Events() {}

  static KvEventBatch batch(KvEvent... events) {
    return KvEventBatch.of(0.0, List.of(events), null);
  }

  static BlockStored stored(List<Long> hashes, Long parent, String medium) {
    return new BlockStored(
        hashes, parent, List.of(), 16, null, medium, null, null, null, null, null);
  }

  static BlockStored stored(
      List<Long> hashes,
      Long parent,
      List<Integer> tokens,
      int blockSize,
      String medium,
      String lora,
      Integer group) {
    return new BlockStored(
        hashes, parent, tokens, blockSize, null, medium, lora, null, group, null, null);
  }

  static BlockRemoved removed(List<Long> hashes, String medium) {
    return new BlockRemoved(hashes, medium, null);
  }

  static AllBlocksCleared cleared() {
    return AllBlocksCleared.INSTANCE;
  }

  /** Hashes base, base+1, ..., base+n-1. */
  static List<Long> hashes(long base, int n) {
    List<Long> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(base + i);
    }
    return out;
  }
}
