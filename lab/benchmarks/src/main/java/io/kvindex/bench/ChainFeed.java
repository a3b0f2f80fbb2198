package io.kvindex.bench;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The batches one engine would publish to store some block chains: each chain's first {@code depth}
 * blocks, {@code batchBlocks} per BlockStored, one BlockStored per batch, parent-linked as vLLM
 * links them. Batches are made lazily. Not thread-safe.
 */
final class ChainFeed implements Iterator<KvEventBatch> {
  /**
   * Blocks {@code from} (inclusive) to {@code to} (exclusive) of a chain; the block before {@code
   * from} is the first batch's parent.
   */
  record Span(long[] chain, int from, int to) {
    /** A chain's first {@code depth} blocks. */
    static Span prefix(long[] chain, int depth) {
      return new Span(chain, 0, depth);
    }
  }

  private final Iterator<Span> spans;
  private final int batchBlocks;
  private Span span;
  private int next;

  ChainFeed(List<Span> spans, int batchBlocks) {
    this.spans = spans.iterator();
    this.batchBlocks = batchBlocks;
  }

  @Override
  public boolean hasNext() {
    while (span == null || next >= span.to()) {
      if (!spans.hasNext()) {
        return false;
      }
      span = spans.next();
      next = span.from();
    }
    return true;
  }

  @Override
  public KvEventBatch next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    int to = Math.min(span.to(), next + batchBlocks);
    List<Long> hashes = new ArrayList<>(to - next);
    for (int i = next; i < to; i++) {
      hashes.add(span.chain()[i]);
    }
    Long parent = next == 0 ? null : span.chain()[next - 1];
    next = to;
    BlockStored stored = BlockStored.of(hashes, parent, List.of(), 16);
    return KvEventBatch.of(System.currentTimeMillis() / 1000.0, List.of(stored), 0);
  }
}
