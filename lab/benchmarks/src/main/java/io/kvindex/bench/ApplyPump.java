package io.kvindex.bench;

import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Applies several streams' batches from one client as an ingester would: each stream in sequence
 * order (after its watermark, if it has one) with one apply in flight, all streams at once on the
 * index's one connection. With {@link Calls#COALESCED}, a stream's consecutive batches are applied
 * as one call while their blocks fit one chunk ({@link PrefixIndex#applyChunkBlocks}), as the
 * ingester applies a stream that is behind its engine (every stream is, at saturation); with {@link
 * Calls#ONE_PER_BATCH}, one call per batch. Any outcome other than APPLIED fails the pump (a
 * benchmark must not count work that did not happen). Not thread-safe: one run at a time.
 */
final class ApplyPump {
  static final String OWNER = "kvindex-bench";

  /** One stream and the batches to apply to it. */
  record Feed(StreamId stream, Iterator<KvEventBatch> batches) {
    /** The benchmarks index their fixtures with engine keys. */
    KeyMode mode() {
      return KeyMode.ENGINE;
    }
  }

  /** How a stream's batches map to apply calls. */
  enum Calls {
    ONE_PER_BATCH,
    COALESCED
  }

  private ApplyPump() {}

  /** Applies every feed to the end, one call per batch; returns the blocks stored. */
  static long run(PrefixIndex index, List<Feed> feeds) {
    return run(index, feeds, Calls.ONE_PER_BATCH);
  }

  /** Applies every feed to the end; returns the blocks stored. */
  static long run(PrefixIndex index, List<Feed> feeds, Calls calls) {
    AtomicLong blocks = new AtomicLong();
    int mergeBlocks = calls == Calls.COALESCED ? index.applyChunkBlocks() : 0;
    List<CompletableFuture<Void>> done = new ArrayList<>();
    for (Feed feed : feeds) {
      Lease token =
          index
              .acquireLease(feed.stream(), OWNER, Duration.ofHours(2))
              .orElseThrow(
                  () -> new IllegalStateException("no lease for " + feed.stream() + " (taken?)"));
      CompletableFuture<Void> streamDone = new CompletableFuture<>();
      // A stream fed before goes on after its watermark (the index refuses a replayed sequence).
      long first = index.watermark(feed.stream()).orElse(-1) + 1;
      new Stream(index, feed, token, mergeBlocks, blocks, streamDone).next(first);
      done.add(streamDone);
    }
    CompletableFuture.allOf(done.toArray(new CompletableFuture<?>[0])).join();
    return blocks.get();
  }

  private static final class Stream {
    private final PrefixIndex index;
    private final Feed feed;
    private final Lease token;
    private final int mergeBlocks;
    private final AtomicLong blocks;
    private final CompletableFuture<Void> done;

    /** The batch taken from the feed that did not fit the last call (null: none). */
    private KvEventBatch ahead;

    Stream(
        PrefixIndex index,
        Feed feed,
        Lease token,
        int mergeBlocks,
        AtomicLong blocks,
        CompletableFuture<Void> done) {
      this.index = index;
      this.feed = feed;
      this.token = token;
      this.mergeBlocks = mergeBlocks;
      this.blocks = blocks;
      this.done = done;
    }

    private KvEventBatch take() {
      KvEventBatch batch = ahead;
      ahead = null;
      return batch != null ? batch : feed.batches().hasNext() ? feed.batches().next() : null;
    }

    void next(long seq) {
      KvEventBatch head = take();
      if (head == null) {
        done.complete(null);
        return;
      }
      List<KvEventBatch> parts = new ArrayList<>(List.of(head));
      long callBlocks = ApplyPlan.blocks(feed.mode(), head.events());
      while (mergeBlocks > 0) {
        KvEventBatch more = take();
        if (more == null) {
          break;
        }
        long moreBlocks = ApplyPlan.blocks(feed.mode(), more.events());
        if (callBlocks + moreBlocks > mergeBlocks) {
          ahead = more;
          break;
        }
        parts.add(more);
        callBlocks += moreBlocks;
      }
      KvEventBatch batch = KvEventBatch.concat(parts);
      long through = seq + parts.size() - 1;
      index
          .applyAsync(feed.stream(), feed.mode(), seq, through, token, batch, false)
          .whenComplete((result, error) -> completed(seq, through, result, error));
    }

    private void completed(long seq, long through, ApplyResult result, Throwable error) {
      if (error != null) {
        done.completeExceptionally(error);
      } else if (result.status() != ApplyStatus.APPLIED) {
        done.completeExceptionally(
            new IllegalStateException(
                "apply of "
                    + feed.stream()
                    + " seqs "
                    + seq
                    + ".."
                    + through
                    + " returned "
                    + result));
      } else {
        blocks.addAndGet(result.blocksStored());
        next(through + 1);
      }
    }
  }
}
