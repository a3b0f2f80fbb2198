package io.kvindex.index;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** Terse event builders for index tests. */
public final class Events {
  /** The models the tests index with token keys; every other model uses engine keys. */
  private static final Set<String> TOKEN_MODELS = Set.of("tok", RandomFleet.TOKEN_MODEL);

  private Events() {}

  /** The key mode the tests index a stream's model in. */
  public static KeyMode mode(StreamId stream) {
    return TOKEN_MODELS.contains(stream.model()) ? KeyMode.TOKEN : KeyMode.ENGINE;
  }

  public static KvEventBatch batch(KvEvent... events) {
    return KvEventBatch.of(0.0, List.of(events), null);
  }

  public static BlockStored stored(List<Long> hashes, Long parent, String medium) {
    return new BlockStored(
        hashes, parent, List.of(), 16, null, medium, null, null, null, null, null);
  }

  public static BlockStored stored(
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

  public static BlockRemoved removed(List<Long> hashes, String medium) {
    return new BlockRemoved(hashes, medium, null);
  }

  public static AllBlocksCleared cleared() {
    return AllBlocksCleared.INSTANCE;
  }

  /** Hashes base, base+1, ..., base+n-1, as the array lookups and routes take. */
  public static long[] keys(long base, int n) {
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      out[i] = base + i;
    }
    return out;
  }

  /** A list of keys as an array. */
  public static long[] array(List<Long> keys) {
    return keys.stream().mapToLong(Long::longValue).toArray();
  }

  /** Hashes base, base+1, ..., base+n-1. */
  public static List<Long> hashes(long base, int n) {
    List<Long> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(base + i);
    }
    return out;
  }
}
