package io.kvindex.bench;

import io.kvindex.event.KvEventBatch;
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
 * order (after its watermark, if it has one) with one batch in flight, all streams at once on the
 * index's one connection. Any outcome other than APPLIED fails the pump (a benchmark must not count
 * work that did not happen). Not thread-safe: one run at a time.
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

  private ApplyPump() {}

  /** Applies every feed to the end; returns the blocks stored. */
  static long run(PrefixIndex index, List<Feed> feeds) {
    AtomicLong blocks = new AtomicLong();
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
      new Stream(index, feed, token, blocks, streamDone).next(first);
      done.add(streamDone);
    }
    CompletableFuture.allOf(done.toArray(new CompletableFuture<?>[0])).join();
    return blocks.get();
  }

  private record Stream(
      PrefixIndex index, Feed feed, Lease token, AtomicLong blocks, CompletableFuture<Void> done) {

    void next(long seq) {
      if (!feed.batches().hasNext()) {
        done.complete(null);
        return;
      }
      KvEventBatch batch = feed.batches().next();
      index
          .applyAsync(feed.stream(), feed.mode(), seq, token, batch)
          .whenComplete((result, error) -> completed(seq, result, error));
    }

    private void completed(long seq, ApplyResult result, Throwable error) {
      if (error != null) {
        done.completeExceptionally(error);
      } else if (result.status() != ApplyStatus.APPLIED) {
        done.completeExceptionally(
            new IllegalStateException(
                "apply of " + feed.stream() + " seq " + seq + " returned " + result));
      } else {
        blocks.addAndGet(result.blocksStored());
        next(seq + 1);
      }
    }
  }
}
