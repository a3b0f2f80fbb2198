package io.kvindex.index;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import java.util.List;

/**
 * What every index checks before it writes any of a batch: fields it cannot store make the whole
 * batch one it can never apply. Thread-safe (stateless).
 */
public final class BatchCheck {
  /** The largest sequence number: Lua keeps numbers as doubles, exact up to 2^53. */
  public static final long MAX_SEQ = 1L << 53;

  private BatchCheck() {}

  /**
   * @throws BatchRejectedException naming the first field the index cannot store
   */
  public static void check(long seq, List<KvEvent> events) {
    if (seq < 0 || seq > MAX_SEQ) {
      throw invalid("sequence number " + seq + " is outside [0, 2^53]", null);
    }
    checkEvents(events);
  }

  /**
   * {@link #check(long, List)} for an apply plan: batches {@code firstSeq} to {@code seq}, which,
   * when several are applied as one ({@link StreamWrites#applyAsync(StreamWrites.Keys, ApplyPlan,
   * Lease, boolean)}), must fit one chunk of {@code chunkBlocks} as the plan counts them.
   *
   * @throws IllegalArgumentException if the range is empty, or holds several batches whose events
   *     do not fit one chunk of {@code chunkBlocks}
   * @throws BatchRejectedException naming the first field the index cannot store
   */
  public static void check(ApplyPlan plan, int chunkBlocks) {
    long firstSeq = plan.firstSeq();
    long seq = plan.seq();
    if (firstSeq > seq) {
      throw new IllegalArgumentException(
          "the first sequence " + firstSeq + " is past the last, " + seq);
    }
    if (firstSeq < 0) {
      throw invalid("sequence number " + firstSeq + " is outside [0, 2^53]", null);
    }
    check(seq, plan.batch().events());
    if (firstSeq < seq && plan.blocks() > chunkBlocks) {
      throw new IllegalArgumentException(
          "batches "
              + firstSeq
              + ".."
              + seq
              + " applied as one count "
              + plan.blocks()
              + " blocks, more than one apply call's "
              + chunkBlocks
              + "; apply them one by one");
    }
  }

  private static void checkEvents(List<KvEvent> events) {
    for (KvEvent event : events) {
      try {
        if (event instanceof BlockStored s) {
          s.cacheGroup();
          for (int token : s.tokenIds()) {
            if (token < 0) {
              throw new IllegalArgumentException("token ids must be >= 0, got " + token);
            }
          }
        } else if (event instanceof BlockRemoved r) {
          r.cacheGroup();
        }
      } catch (IllegalArgumentException e) {
        throw invalid(e.getMessage(), e);
      }
    }
  }

  private static BatchRejectedException invalid(String message, Throwable cause) {
    return new BatchRejectedException("invalid", message, cause);
  }
}
