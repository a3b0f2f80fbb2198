package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.BatchCheck;
import io.kvindex.index.BatchRejectedException;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.index.StreamWrites;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRejectedException;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * A stream's writes: its batches applied chunk by chunk, its purges, the publish that ends a staged
 * rebuild, and its watermark. Each call is one script fenced by the stream's lease and the epoch
 * this process knows; a write refused for another epoch learns the group's before it answers.
 * Thread-safe.
 */
final class RedisStreamWrites {
  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final RedisNotes notes;
  private final IndexIdentity identity;
  private final IntFunction<CompletableFuture<String>> init;
  private final Supplier<? extends CompletionStage<?>> betweenChunks;

  /** A model's recorded cache layout (one read of the index's {@code layouts} hash). */
  private final Function<String, CompletableFuture<Optional<CacheLayout>>> layouts;

  /** Models tracked at most in {@link #anchors}; past it the map starts afresh. */
  private static final int MAX_ANCHORED_MODELS = 65_536;

  /**
   * Per model, the full-attention group its last call with one stored to (EventPacker's anchor),
   * for a call of sparse stores alone.
   */
  private final Map<String, Integer> anchors = new ConcurrentHashMap<>();

  /**
   * {@code init}: records a group if it needs it and answers its epoch (init.lua); {@code
   * betweenChunks}: what a batch applied in several calls waits for between two of them; {@code
   * layouts}: a model's recorded cache layout.
   */
  RedisStreamWrites(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner writes,
      RedisNotes notes,
      IndexIdentity identity,
      IntFunction<CompletableFuture<String>> init,
      Supplier<? extends CompletionStage<?>> betweenChunks,
      Function<String, CompletableFuture<Optional<CacheLayout>>> layouts) {
    this.layouts = layouts;
    this.config = config;
    this.keys = keys;
    this.writes = writes;
    this.notes = notes;
    this.identity = identity;
    this.init = init;
    this.betweenChunks = betweenChunks;
  }

  private void rememberAnchor(String model, int anchor) {
    if (anchor == EventPacker.NO_ANCHOR || Integer.valueOf(anchor).equals(anchors.get(model))) {
      return;
    }
    if (anchors.size() >= MAX_ANCHORED_MODELS) {
      anchors.clear();
    }
    anchors.put(model, anchor);
  }

  /** The keys of {@code stream}, derived once for its applies. */
  RedisStreamKeys keys(StreamId stream, KeyMode mode) {
    Check.notNull(stream, "stream");
    Check.notNull(mode, "mode");
    return RedisStreamKeys.of(keys, stream, mode);
  }

  /** Applies batches {@code firstSeq} to {@code seq} (one, when equal) of a stream as one. */
  CompletableFuture<ApplyResult> apply(
      StreamId stream,
      KeyMode mode,
      long firstSeq,
      long seq,
      Lease lease,
      KvEventBatch batch,
      boolean staged) {
    RedisStreamKeys k = keys(stream, mode);
    return apply(k, ApplyPlan.of(mode, firstSeq, seq, batch), lease, staged);
  }

  /**
   * Applies the plan's batches of the stream whose keys these are, packed in the chunks the plan
   * cuts.
   */
  CompletableFuture<ApplyResult> apply(
      StreamWrites.Keys streamKeys, ApplyPlan plan, Lease lease, boolean staged) {
    StreamWrites.checkPlan(streamKeys, plan);
    RedisStreamKeys k = RedisStreamKeys.in(keys, streamKeys);
    StreamId stream = k.stream();
    Check.notNull(lease, "lease");
    int chunkBlocks = config.applyChunkBlocks();
    BatchCheck.check(plan, chunkBlocks);
    int known = anchors.getOrDefault(stream.model(), EventPacker.NO_ANCHOR);
    EventPacker.Packed packed = EventPacker.pack(plan, stream.model(), chunkBlocks, 0, known);
    if (packed.anchor() == EventPacker.NO_ANCHOR
        && k.mode() == KeyMode.ENGINE
        && EventPacker.anySparse(plan.batch().events())) {
      // Sparse stores alone, and this writer has not seen the model's full-attention group yet:
      // the layout the ingesters recorded names it.
      return layoutAnchor(stream.model())
          .thenCompose(
              anchor -> {
                rememberAnchor(stream.model(), anchor);
                return apply(
                    k,
                    plan,
                    lease,
                    staged,
                    EventPacker.pack(plan, stream.model(), chunkBlocks, 0, anchor));
              });
    }
    rememberAnchor(stream.model(), packed.anchor());
    return apply(k, plan, lease, staged, packed);
  }

  /**
   * The model's anchor as its recorded cache layout gives it: its lowest full-attention group,
   * {@link EventPacker#OWN_CHAIN} for a layout without one, {@link EventPacker#NO_ANCHOR} when none
   * is recorded or it cannot be read.
   */
  private CompletableFuture<Integer> layoutAnchor(String model) {
    return layouts
        .apply(model)
        .thenApply(
            layout ->
                layout
                    .map(
                        l ->
                            l.groups().stream()
                                .filter(g -> g.kind() == CacheLayout.Kind.FULL)
                                .mapToInt(CacheLayout.Group::index)
                                .findFirst()
                                .orElse(EventPacker.OWN_CHAIN))
                    .orElse(EventPacker.NO_ANCHOR))
        .exceptionally(failure -> EventPacker.NO_ANCHOR);
  }

  /** Notes the model's layout as an ingester records it: its anchor for sparse stores. */
  void noteLayout(String model, CacheLayout layout) {
    layout.groups().stream()
        .filter(g -> g.kind() == CacheLayout.Kind.FULL)
        .mapToInt(CacheLayout.Group::index)
        .findFirst()
        .ifPresent(anchor -> rememberAnchor(model, anchor));
  }

  private CompletableFuture<ApplyResult> apply(
      RedisStreamKeys k, ApplyPlan plan, Lease lease, boolean staged, EventPacker.Packed packed) {
    int g = k.group;
    StreamId stream = k.stream();
    ApplyCall head =
        new ApplyCall(
            k,
            plan.firstSeq(),
            plan.seq(),
            lease,
            config.podTtl().toMillis(),
            config.segmentSlots(),
            staged,
            packed.blocks(),
            packed.digest(),
            null, // the epoch, read when each chunk is sent
            0,
            0,
            List.of());
    notes.writer(g, stream.model(), k.mode());
    ChunkedApply call = new ChunkedApply(g, head, packed, plan, stream.model());
    return applyChunks(call, 0)
        .thenCompose(result -> afterWrite(g, result, result.status() == ApplyStatus.RESET));
  }

  /** One call's events on their way through their chunks, and what the applied chunks did. */
  private final class ChunkedApply {
    final int group;
    final ApplyCall head;
    final ApplyPlan plan;
    final String model;
    final int callsAllowed;
    EventPacker.Packed packed;
    int calls;
    int stored;
    int removed;
    int dropped;

    ChunkedApply(
        int group, ApplyCall head, EventPacker.Packed packed, ApplyPlan plan, String model) {
      this.group = group;
      this.head = head;
      this.packed = packed;
      this.plan = plan;
      this.model = model;
      this.dropped = packed.dropped();
      // Every chunk sent twice and skipped once, and one jump to where a former call stopped (whose
      // chunks may start one chunk earlier): past it, a bug.
      this.callsAllowed = 3 * (packed.chunks().size() + 1) + 1;
    }

    boolean tooMany() {
      return ++calls > callsAllowed;
    }

    /**
     * The chunk that starts at {@code position}: this packing's, or the events packed again from
     * there (a former call, packed in chunks of another size, stopped inside one of these).
     */
    EventPacker.Chunk chunkAt(long position) {
      if (position < 0 || position >= Math.max(1, packed.blocks())) {
        throw new IllegalStateException(
            "the index names position "
                + position
                + " of a call of "
                + packed.blocks()
                + " blocks as the next: a bug, please report it");
      }
      EventPacker.Chunk chunk = packed.startingAt(position);
      if (chunk == null) {
        packed =
            EventPacker.pack(plan, model, config.applyChunkBlocks(), position, packed.anchor());
        chunk = packed.chunks().get(0);
      }
      return chunk;
    }
  }

  private CompletableFuture<ApplyResult> applyChunks(ChunkedApply call, long position) {
    if (call.tooMany()) {
      return CompletableFuture.failedFuture(
          new IllegalStateException(
              "apply went round its chunks without finishing: a bug, please report it"));
    }
    EventPacker.Chunk chunk;
    try {
      chunk = call.chunkAt(position);
    } catch (IllegalStateException e) {
      return CompletableFuture.failedFuture(e);
    }
    return call.head
        .chunk(epochOf(call.group), chunk.from(), chunk.to(), chunk.events())
        .on(keys)
        .<List<Object>>run(writes, ScriptOutputType.MULTI)
        .handle(
            (outcome, failure) -> {
              if (failure != null) {
                throw slotsFull(failure);
              }
              return outcome;
            })
        .thenCompose(
            outcome -> {
              if (!outcome.isDone()) {
                return CompletableFuture.completedFuture(ApplyResult.of(ApplyStatus.SWALLOWED, -1));
              }
              List<Object> reply = outcome.orElseThrow();
              String status = text(reply.get(0));
              long wm = (Long) reply.get(1);
              call.stored += ((Long) reply.get(2)).intValue();
              call.removed += ((Long) reply.get(3)).intValue();
              call.dropped += ((Long) reply.get(4)).intValue();
              if (status.equals("CHUNK")) {
                long next = (Long) reply.get(5);
                return betweenChunks
                    .get()
                    .toCompletableFuture()
                    .thenCompose(ignored -> applyChunks(call, next));
              }
              ApplyStatus applied = ApplyStatus.valueOf(status);
              return CompletableFuture.completedFuture(
                  applied == ApplyStatus.APPLIED
                      ? new ApplyResult(applied, wm, call.stored, call.removed, call.dropped)
                      : ApplyResult.of(applied, wm));
            });
  }

  /** Every holder slot of the group is taken: this batch can never apply as it is. */
  private static RuntimeException slotsFull(Throwable failure) {
    Throwable cause = failure instanceof CompletionException c ? c.getCause() : failure;
    if (cause instanceof ScriptRejectedException r && r.code().equals("KVINDEX_SLOTS_FULL")) {
      return new BatchRejectedException("slots_full", r.detail(), r);
    }
    return cause instanceof RuntimeException e ? e : new CompletionException(cause);
  }

  /**
   * A write refused for an epoch this process did not know: learn (or make) the group's epoch
   * without blocking, then answer. Listeners hear of the reset before the caller does.
   */
  private <T> CompletableFuture<T> afterWrite(int g, T result, boolean reset) {
    if (!reset) {
      return CompletableFuture.completedFuture(result);
    }
    return init.apply(g)
        .thenApply(
            epoch -> {
              identity.epochIs(g, epoch);
              return result;
            });
  }

  private byte[] epochOf(int g) {
    String epoch = identity.epoch(g);
    return epoch == null ? new byte[0] : ascii(epoch);
  }

  boolean staged(StreamId stream) {
    Check.notNull(stream, "stream");
    RedisOutcome<Long> outcome =
        Await.of(new StagedCall(stream).on(keys).run(writes, ScriptOutputType.INTEGER));
    return outcome.orElseThrow() == 1;
  }

  CompletableFuture<PurgeStatus> publish(StreamId stream, Lease lease) {
    Check.notNull(stream, "stream");
    Check.notNull(lease, "lease");
    int g = group(stream);
    return new PublishCall(stream, lease, epochOf(g), config.podTtl().toMillis())
        .on(keys)
        .<byte[]>run(writes, ScriptOutputType.VALUE)
        .thenCompose(outcome -> purgeStatus(g, outcome));
  }

  CompletableFuture<PurgeStatus> purge(StreamId stream, Lease lease, PurgeMode mode) {
    Check.notNull(stream, "stream");
    Check.notNull(lease, "lease");
    Check.notNull(mode, "mode");
    int g = group(stream);
    return new PurgeCall(stream, lease, mode, epochOf(g))
        .on(keys)
        .<byte[]>run(writes, ScriptOutputType.VALUE)
        .thenCompose(outcome -> purgeStatus(g, outcome));
  }

  /** A purge-like script's reply as its status (SWALLOWED when Redis stayed unavailable). */
  private CompletableFuture<PurgeStatus> purgeStatus(int g, RedisOutcome<byte[]> outcome) {
    PurgeStatus status =
        outcome.isDone() ? PurgeStatus.valueOf(text(outcome.orElseThrow())) : PurgeStatus.SWALLOWED;
    return afterWrite(g, status, status == PurgeStatus.RESET);
  }

  OptionalLong watermark(StreamId stream) {
    Check.notNull(stream, "stream");
    byte[] rec =
        Await.of(new StreamReadCall(stream).on(keys).<byte[]>run(writes, ScriptOutputType.VALUE))
            .orElseThrow();
    StreamRecord record = StreamRecord.decode(rec);
    return record == null || record.watermark() == null
        ? OptionalLong.empty()
        : OptionalLong.of(record.watermark());
  }

  private int group(StreamId stream) {
    return keys.groupOf(stream.model(), stream.pod());
  }
}
