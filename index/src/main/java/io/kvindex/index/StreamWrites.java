package io.kvindex.index;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The ingester's writes of one stream: its batches applied in sequence order under the stream's
 * {@link Lease}, staged and published for a rebuild, purged; its watermark; its pod kept live.
 * Every write is fenced by the lease and by the index's epoch (see {@link PrefixIndex}).
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface StreamWrites {

  /**
   * Applies one batch of a stream's events, in order and exactly once: a batch of more than the
   * configured chunk of blocks is applied in several calls, each atomic and each changing nothing
   * when retried; a lookup meanwhile sees the batch partly applied, as it would see the engine's
   * steps. The watermark moves with the last chunk.
   *
   * @param mode how the stream's model keys its blocks
   * @param seq the batch's sequence number, 0 to 2^53
   * @param lease the stream's lease from {@link Leases#acquireLease}
   * @throws BatchRejectedException if the batch can never apply (nothing of it is written)
   */
  default ApplyResult apply(
      StreamId stream, KeyMode mode, long seq, Lease lease, KvEventBatch batch) {
    return Await.of(applyAsync(stream, mode, seq, lease, batch));
  }

  /** {@link #apply} without blocking; never completes on the caller's thread necessarily. */
  default CompletableFuture<ApplyResult> applyAsync(
      StreamId stream, KeyMode mode, long seq, Lease lease, KvEventBatch batch) {
    return applyAsync(stream, mode, seq, lease, batch, false);
  }

  /**
   * {@link #apply} that, when {@code staged}, leaves the stream's entries invisible to lookups (its
   * pod lists no holder slot for it) until {@link #publish} or the next batch applied unstaged. A
   * writer rebuilding a stream from its engine's replay ring stages the replayed history, so that
   * no lookup sees a past state of the cache (blocks stored and later removed) while the rebuild
   * runs: the pod looks cold, then is shown whole.
   */
  default CompletableFuture<ApplyResult> applyAsync(
      StreamId stream, KeyMode mode, long seq, Lease lease, KvEventBatch batch, boolean staged) {
    return applyAsync(stream, mode, seq, seq, lease, batch, staged);
  }

  /**
   * Applies a stream's consecutive batches {@code firstSeq} to {@code seq} as one: {@code batch}
   * holds their events in order, and they must fit one chunk ({@link #applyChunkBlocks}, counted as
   * {@link ApplyPlan#blocks} counts them). One atomic call, so a writer behind its engine pays one
   * round trip for several batches: the watermark moves from {@code firstSeq - 1} to {@code seq} at
   * once. DUPLICATE when the watermark is at or past {@code firstSeq} (all or some of the batches
   * are applied; nothing changed, and the answer's watermark says where to go on from); GAP when
   * {@code firstSeq} skips past watermark + 1. With {@code firstSeq == seq}, {@link #applyAsync(
   * StreamId, KeyMode, long, Lease, KvEventBatch, boolean)}.
   *
   * @throws IllegalArgumentException if the range is empty or its events do not fit one chunk
   * @throws BatchRejectedException if the events can never apply (nothing of them is written)
   */
  CompletableFuture<ApplyResult> applyAsync(
      StreamId stream,
      KeyMode mode,
      long firstSeq,
      long seq,
      Lease lease,
      KvEventBatch batch,
      boolean staged);

  /**
   * A stream's keys in the index, derived once by {@link #keys} for a writer that applies many of
   * its batches: {@link #applyAsync(Keys, long, long, Lease, KvEventBatch, boolean)} then skips
   * deriving them for every call. Immutable; thread-safe.
   */
  interface Keys {
    StreamId stream();

    /** How the stream's model keys its blocks. */
    KeyMode mode();
  }

  /** The keys of {@code stream}, whose model keys its blocks by {@code mode}. */
  default Keys keys(StreamId stream, KeyMode mode) {
    Check.notNull(stream, "stream");
    Check.notNull(mode, "mode");
    return new Keys() {
      @Override
      public StreamId stream() {
        return stream;
      }

      @Override
      public KeyMode mode() {
        return mode;
      }
    };
  }

  /**
   * {@link #applyAsync(StreamId, KeyMode, long, long, Lease, KvEventBatch, boolean)} of the stream
   * whose {@link #keys} these are (keys derived by another index are derived again).
   */
  default CompletableFuture<ApplyResult> applyAsync(
      Keys keys, long firstSeq, long seq, Lease lease, KvEventBatch batch, boolean staged) {
    Check.notNull(keys, "keys");
    return applyAsync(keys, ApplyPlan.of(keys.mode(), firstSeq, seq, batch), lease, staged);
  }

  /**
   * {@link #applyAsync(Keys, long, long, Lease, KvEventBatch, boolean)} of a plan made once for the
   * call: its batches' range and events, and their counts, which the index reads instead of
   * counting again.
   *
   * @throws IllegalArgumentException if the plan counts blocks in another mode than the stream's
   */
  default CompletableFuture<ApplyResult> applyAsync(
      Keys keys, ApplyPlan plan, Lease lease, boolean staged) {
    checkPlan(keys, plan);
    return applyAsync(
        keys.stream(), keys.mode(), plan.firstSeq(), plan.seq(), lease, plan.batch(), staged);
  }

  /**
   * Checks that {@code plan} was made for the stream whose keys these are: it counts blocks in the
   * stream's key mode.
   *
   * @throws IllegalArgumentException if {@code plan} counts blocks in another mode than {@code
   *     keys}' stream
   */
  static void checkPlan(Keys keys, ApplyPlan plan) {
    Check.notNull(keys, "keys");
    Check.notNull(plan, "plan");
    if (plan.mode() != keys.mode()) {
      throw new IllegalArgumentException(
          "the apply plan counts blocks as a "
              + plan.mode()
              + "-mode stream's, but the stream's model keys its blocks in "
              + keys.mode()
              + " mode; make the plan with the stream's mode");
    }
  }

  /** The blocks one apply call writes at most (a larger batch is applied in several calls). */
  int applyChunkBlocks();

  /** {@link #applyAsync(StreamId, KeyMode, long, Lease, KvEventBatch, boolean)}, waiting. */
  default ApplyResult apply(
      StreamId stream, KeyMode mode, long seq, Lease lease, KvEventBatch batch, boolean staged) {
    return Await.of(applyAsync(stream, mode, seq, lease, batch, staged));
  }

  /**
   * Makes what a stream's staged batches wrote visible to lookups, atomically.
   *
   * @return PURGED when done (the status shared with purges), FENCED, RESET or SWALLOWED
   */
  default PurgeStatus publish(StreamId stream, Lease lease) {
    return Await.of(publishAsync(stream, lease));
  }

  /**
   * Whether the stream's entries are staged: applied by a rebuild and not yet published. A new
   * owner of such a stream goes on rebuilding it.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  boolean staged(StreamId stream);

  /** {@link #publish} without blocking. */
  CompletableFuture<PurgeStatus> publishAsync(StreamId stream, Lease lease);

  /**
   * Makes every entry of the stream invisible at once (O(1)); the entries are removed later by
   * {@link Maintenance#collectGarbage}. Also forgets the stream's engine-to-token key map.
   */
  default PurgeStatus purge(StreamId stream, Lease lease, PurgeMode mode) {
    return Await.of(purgeAsync(stream, lease, mode));
  }

  /** {@link #purge} without blocking. */
  CompletableFuture<PurgeStatus> purgeAsync(StreamId stream, Lease lease, PurgeMode mode);

  /**
   * Keeps an idle pod live until now + ttl (applied batches refresh it with the configured pod
   * TTL). True if done, false if Redis was unavailable.
   */
  boolean heartbeat(String model, String pod, Duration ttl);

  /**
   * The stream's last applied sequence number, for replay after a takeover; empty if it has none.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  OptionalLong watermark(StreamId stream);
}
