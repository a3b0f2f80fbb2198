package io.kvindex.ingester.stream;

import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.KeyMode;
import io.kvindex.ingester.stream.Action.Apply;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Which consecutive waiting batches one apply call carries: a stream behind its engine (a backlog
 * after a Redis outage, a burst) catches up in fewer round trips while their blocks fit one apply
 * chunk; the index moves the watermark over all of them at once, or over none. Pure; not
 * thread-safe: one worker thread drives it.
 */
final class ApplyMerger {
  /** Batches applied as one at most (their blocks are bounded by the apply call's chunk too). */
  static final int MAX_PARTS = 256;

  private final KeyMode mode;
  private int blocks;

  /**
   * Batches up to this sequence are applied one at a time (a merged apply was rejected, or its
   * first batch was part applied).
   */
  private long aloneThrough = -1;

  /**
   * @param mode how the stream's model keys its blocks (what a batch counts against a chunk)
   * @param blocks batches are merged while their blocks fit this many; 0: one batch per apply
   */
  ApplyMerger(KeyMode mode, int blocks) {
    this.mode = mode;
    this.blocks = blocks;
  }

  /** Merges only while the blocks fit {@code limit} too. */
  void within(int limit) {
    this.blocks = Math.min(blocks, limit);
  }

  /** Batches up to {@code seq} are applied one at a time from now on. */
  void aloneThrough(long seq) {
    aloneThrough = Math.max(aloneThrough, seq);
  }

  /**
   * The apply of {@code head} with the consecutive batches {@code after} it that fit one call with
   * it, each as {@code asApplied} makes it. A batch that cannot be read ends the run (it has its
   * own repair).
   */
  Apply apply(Batch head, Iterable<Batch> after, UnaryOperator<Batch> asApplied, boolean staged) {
    if (blocks <= 0 || head.seq() <= aloneThrough) {
      return new Apply(head, staged);
    }
    long sum = ApplyPlan.blocks(mode, head.events().events());
    List<Batch> parts = new ArrayList<>(List.of(head));
    for (Batch b : after) {
      boolean next = b.seq() == head.seq() + parts.size() && b.seq() > aloneThrough;
      if (!next || b.malformed() != null || parts.size() >= MAX_PARTS) {
        break;
      }
      Batch part = asApplied.apply(b);
      long partBlocks = ApplyPlan.blocks(mode, part.events().events());
      if (sum + partBlocks > blocks) {
        break;
      }
      sum += partBlocks;
      parts.add(part);
    }
    if (parts.size() == 1) {
      return new Apply(head, staged);
    }
    return new Apply(merged(parts), staged, parts, sum);
  }

  /** Several consecutive batches as one: their events in order, the last one's sequence. */
  private static Batch merged(List<Batch> parts) {
    long bytes = 0;
    for (Batch p : parts) {
      bytes += p.bytes();
    }
    Batch tail = parts.get(parts.size() - 1);
    KvEventBatch events = KvEventBatch.concat(parts.stream().map(Batch::events).toList());
    return new Batch(tail.seq(), tail.payloadHash(), events, null, tail.live(), bytes);
  }
}
