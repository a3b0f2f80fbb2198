package io.kvindex.index;

import io.kvindex.common.Check;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;

/**
 * One apply of a stream's events, counted once: batches {@code firstSeq} to {@code seq} (one, when
 * equal) as one call's events, how many blocks they count against an apply call's chunk, and where
 * chunks of a given size cut them. The steps after it read these counts instead of counting again:
 * {@link BatchCheck} (a run of batches must fit one call), the index that packs the call chunk by
 * chunk, and the ingester that leaves room beside its batches for what else a call carries.
 *
 * <p>The call's <b>positions</b> are its events' blocks counted in order: an AllBlocksCleared one,
 * each removed block one, each stored block one; none for a token-mode store without its tokens,
 * which the index drops (its blocks are counted as {@link #dropped}). A position counts its
 * <b>weight</b> against a chunk: two for a token-mode stored block (the script hashes it), else
 * one. Chunks are cut greedily in order: a position starts a new chunk once the current one counts
 * the chunk's size or more (so a token-mode block given the last unit of room overshoots by one).
 * Immutable; thread-safe.
 */
public final class ApplyPlan {

  /** Positions {@code from} to {@code to} (exclusive) of a call: what one apply call writes. */
  public record Chunk(long from, long to) {}

  private final KeyMode mode;
  private final long firstSeq;
  private final long seq;
  private final KvEventBatch batch;
  private final long blocks;
  private final long positions;
  private final int dropped;

  private ApplyPlan(KeyMode mode, long firstSeq, long seq, KvEventBatch batch) {
    this.mode = Check.notNull(mode, "mode");
    this.batch = Check.notNull(batch, "batch");
    this.firstSeq = firstSeq;
    this.seq = seq;
    long weighted = 0;
    long count = 0;
    int lost = 0;
    for (KvEvent event : batch.events()) {
      int n = positions(mode, event);
      weighted += (long) weight(mode, event) * n;
      count += n;
      if (n == 0 && event instanceof BlockStored s) {
        lost += s.blockHashes().size(); // a token-mode store without its tokens
      }
    }
    this.blocks = weighted;
    this.positions = count;
    this.dropped = lost;
  }

  /** Batch {@code seq} alone. */
  public static ApplyPlan of(KeyMode mode, long seq, KvEventBatch batch) {
    return new ApplyPlan(mode, seq, seq, batch);
  }

  /**
   * Consecutive batches {@code firstSeq} to {@code seq} applied as one: {@code batch} holds their
   * events in order. The range is checked by {@link BatchCheck}, not here.
   */
  public static ApplyPlan of(KeyMode mode, long firstSeq, long seq, KvEventBatch batch) {
    return new ApplyPlan(mode, firstSeq, seq, batch);
  }

  public KeyMode mode() {
    return mode;
  }

  /** The first batch's sequence. */
  public long firstSeq() {
    return firstSeq;
  }

  /** The last batch's sequence: the watermark once applied. */
  public long seq() {
    return seq;
  }

  /** The call's events. */
  public KvEventBatch batch() {
    return batch;
  }

  /**
   * What the events count against an apply call's chunk ({@link StreamWrites#applyChunkBlocks}).
   */
  public long blocks() {
    return blocks;
  }

  /** The call's positions: the blocks it applies, in order. */
  public long positions() {
    return positions;
  }

  /** Blocks of token-mode stores without their tokens: dropped by the index, not applied. */
  public int dropped() {
    return dropped;
  }

  /**
   * The call's chunks of at most {@code chunkBlocks}: at least one (an empty one, for no blocks).
   */
  public List<Chunk> chunks(int chunkBlocks) {
    return chunks(chunkBlocks, 0);
  }

  /**
   * The call's chunks of at most {@code chunkBlocks} from position {@code start} on, cut as if the
   * call began there (a writer that resumes a call another left between two chunks): at least one.
   */
  public List<Chunk> chunks(int chunkBlocks, long start) {
    Check.atLeast(chunkBlocks, 1, "chunkBlocks");
    if (start == 0 && blocks <= chunkBlocks) {
      return List.of(new Chunk(0, positions)); // most calls: no position finds its chunk full
    }
    List<Chunk> out = new ArrayList<>();
    long from = start;
    long used = 0;
    long position = 0;
    for (KvEvent event : batch.events()) {
      int n = positions(mode, event);
      int weight = weight(mode, event);
      long end = position + n;
      for (long p = Math.max(position, start); p < end; ) {
        if (used >= chunkBlocks) {
          out.add(new Chunk(from, p));
          from = p;
          used = 0;
        }
        long taken = Math.min(end - p, (chunkBlocks - used + weight - 1) / weight);
        used += taken * weight;
        p += taken;
      }
      position = end;
    }
    out.add(new Chunk(from, Math.max(from, position)));
    return out;
  }

  /** What {@code events} count against an apply call's chunk ({@link #blocks} of their plan). */
  public static long blocks(KeyMode mode, List<KvEvent> events) {
    long blocks = 0;
    for (KvEvent event : events) {
      blocks += (long) weight(mode, event) * positions(mode, event);
    }
    return blocks;
  }

  /**
   * An event's positions in its call: an AllBlocksCleared one, each removed or stored block one;
   * none for a store the index drops (a token-mode one without its tokens).
   */
  public static int positions(KeyMode mode, KvEvent event) {
    if (event instanceof AllBlocksCleared) {
      return 1;
    } else if (event instanceof BlockRemoved r) {
      return r.blockHashes().size();
    } else if (event instanceof BlockStored s) {
      return mode == KeyMode.TOKEN && !s.carriesEveryToken() ? 0 : s.blockHashes().size();
    }
    return 0;
  }

  /** What each position of an event counts against a chunk: two for a token-mode stored block. */
  private static int weight(KeyMode mode, KvEvent event) {
    return mode == KeyMode.TOKEN && event instanceof BlockStored ? 2 : 1;
  }
}
