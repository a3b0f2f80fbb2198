package io.kvindex.index;

import io.kvindex.event.AllBlocksCleared;
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
   * {@link #check(long, List)} for consecutive batches applied as one ({@link
   * PrefixIndex#applyAsync(StreamId, KeyMode, long, long, Lease, io.kvindex.event.KvEventBatch,
   * boolean)}).
   *
   * @throws IllegalArgumentException if the range is empty, or holds several batches whose events
   *     do not fit one chunk of {@code chunkBlocks}
   * @throws BatchRejectedException naming the first field the index cannot store
   */
  public static void check(
      long firstSeq, long seq, KeyMode mode, List<KvEvent> events, int chunkBlocks) {
    if (firstSeq > seq) {
      throw new IllegalArgumentException(
          "the first sequence " + firstSeq + " is past the last, " + seq);
    }
    if (firstSeq < 0) {
      throw invalid("sequence number " + firstSeq + " is outside [0, 2^53]", null);
    }
    check(seq, events);
    if (firstSeq < seq) {
      long blocks = chunkBlocks(mode, events);
      if (blocks > chunkBlocks) {
        throw new IllegalArgumentException(
            "batches "
                + firstSeq
                + ".."
                + seq
                + " applied as one count "
                + blocks
                + " blocks, more than one apply call's "
                + chunkBlocks
                + "; apply them one by one");
      }
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

  /**
   * What events count against an apply call's chunk of blocks: an AllBlocksCleared one, a removed
   * block one, a stored block one (two in token mode, where the script hashes it; none for a
   * token-mode store without its tokens, which is dropped). Events that fit {@link
   * PrefixIndex#applyChunkBlocks} are applied in one call.
   */
  public static long chunkBlocks(KeyMode mode, List<KvEvent> events) {
    long blocks = 0;
    for (KvEvent event : events) {
      if (event instanceof AllBlocksCleared) {
        blocks++;
      } else if (event instanceof BlockRemoved r) {
        blocks += r.blockHashes().size();
      } else if (event instanceof BlockStored s
          && (mode == KeyMode.ENGINE || s.carriesEveryToken())) {
        blocks += (long) storedBlockWeight(mode) * s.blockHashes().size();
      }
    }
    return blocks;
  }

  /** What one stored block counts against a chunk: the script hashes a token-mode block (two). */
  public static int storedBlockWeight(KeyMode mode) {
    return mode == KeyMode.ENGINE ? 1 : 2;
  }

  private static BatchRejectedException invalid(String message, Throwable cause) {
    return new BatchRejectedException("invalid", message, cause);
  }
}
