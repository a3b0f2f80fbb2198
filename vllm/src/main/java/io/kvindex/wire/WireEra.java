package io.kvindex.wire;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;

/**
 * The layouts vLLM has used for a {@code KVEventBatch} payload, oldest first. Each constant names
 * the first vLLM release (often only expected, see the wire spec) that sends it. Immutable.
 */
public enum WireEra {
  /** v0.9.0: batch {@code [ts, events]}; BlockStored of 6, BlockRemoved of 2 elements. */
  V0_9_0(2, 6, 2, false),
  /** v0.9.1 (PR #18925): batch gains {@code data_parallel_rank}; events unchanged (6/2). */
  V0_9_1(3, 6, 2, false),
  /** v0.10.2 (PR #19737): events gain {@code medium} (7/3). */
  V0_10_2(3, 7, 3, false),
  /** v0.14 (PR #27577): BlockStored gains {@code lora_name} (8/3). */
  V0_14(3, 8, 3, false),
  /** v0.17 (PR #33304): BlockStored gains {@code extra_keys} (9/3). */
  V0_17(3, 9, 3, false),
  /** v0.20 (PR #37688): both gain {@code group_idx} (10/4). */
  V0_20(3, 10, 4, false),
  /** v0.22 (PR #40984): BlockStored gains the two {@code kv_cache_spec_*} fields (12/4). */
  V0_22(3, 12, 4, false),
  /**
   * v0.23 and later (PR #42892): events are tagged maps ({@code "type"} first, optional fields
   * omitted when nil); the batch is still a 3-element array. Stores of v0.26 and later may carry
   * {@code locality}, later {@code ownership} and {@code session_id}, which no array era sent.
   */
  MAP(3, 12, 4, true);

  private final int batchLength;
  private final int storedLength;
  private final int removedLength;
  private final boolean mapEvents;

  WireEra(int batchLength, int storedLength, int removedLength, boolean mapEvents) {
    this.batchLength = batchLength;
    this.storedLength = storedLength;
    this.removedLength = removedLength;
    this.mapEvents = mapEvents;
  }

  /** The number of elements of the outer batch array (2 or 3). */
  public int batchLength() {
    return batchLength;
  }

  /** The number of elements of a BlockStored array, tag included (the fields a map can carry). */
  public int storedLength() {
    return storedLength;
  }

  /** The number of elements of a BlockRemoved array, tag included. */
  public int removedLength() {
    return removedLength;
  }

  /** Whether events are maps rather than arrays. */
  public boolean mapEvents() {
    return mapEvents;
  }

  /**
   * The batch as a decoder sees it after it went over the wire in this era: the fields this era
   * cannot carry become {@code null}, and skipped tags are dropped (they cannot be encoded).
   */
  public KvEventBatch carried(KvEventBatch batch) {
    List<KvEvent> events = new ArrayList<>(batch.events().size());
    for (KvEvent event : batch.events()) {
      events.add(carried(event));
    }
    return KvEventBatch.of(
        batch.timestamp(), events, batchLength > 2 ? batch.dataParallelRank() : null);
  }

  /** The event as a decoder sees it after it went over the wire in this era. */
  public KvEvent carried(KvEvent event) {
    if (event instanceof BlockStored s) {
      int n = storedLength;
      return new BlockStored(
          s.blockHashes(),
          s.parentBlockHash(),
          s.tokenIds(),
          s.blockSize(),
          s.loraId(),
          n > 6 ? s.medium() : null,
          n > 7 ? s.loraName() : null,
          n > 8 ? s.extraKeys() : null,
          n > 9 ? s.groupIdx() : null,
          n > 10 ? s.kvCacheSpecKind() : null,
          n > 11 ? s.kvCacheSpecSlidingWindow() : null,
          mapEvents ? s.locality() : null,
          mapEvents ? s.ownership() : null,
          mapEvents ? s.sessionId() : null);
    }
    if (event instanceof BlockRemoved r) {
      return new BlockRemoved(
          r.blockHashes(),
          removedLength > 2 ? r.medium() : null,
          removedLength > 3 ? r.groupIdx() : null,
          mapEvents ? r.locality() : null);
    }
    return AllBlocksCleared.INSTANCE;
  }
}
