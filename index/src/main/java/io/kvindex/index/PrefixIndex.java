package io.kvindex.index;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The shared index of which pod holds which KV-cache blocks: written per stream by the ingester
 * (ordered, fenced, atomic batches), read per prompt by routers (one round trip per index group).
 *
 * <p>Semantics every implementation shares:
 *
 * <ul>
 *   <li>A stream's batches apply in sequence order: the first batch (or the first after a purge
 *       that reset the watermark) may have any sequence number; then only watermark + 1 applies.
 *   <li>Writes need the stream's current {@link Lease} (see {@link #acquireLease}); the index
 *       compares its token and its owner.
 *   <li>The index has an epoch, created with it and again whenever Redis lost it (a restart without
 *       persistence, a FLUSHALL): a write of a process that last saw another epoch is refused as
 *       {@code RESET}, and {@link #addResetListener listeners} hear of it, as they do when Redis
 *       changed the node history it serves (a failover): either way what the index holds may be
 *       older than what its writers and readers remember.
 *   <li>A purge, and an {@code AllBlocksCleared} event, make all the stream's entries invisible at
 *       once; later events of the same batch start from an empty cache.
 *   <li>A pod is live until its liveness deadline (refreshed by every applied batch and by {@link
 *       #heartbeat}); entries of pods that are not live are invisible.
 *   <li>Temporary Redis errors are retried, then reported as SWALLOWED / incomplete (or, where a
 *       call cannot go on without the answer, as {@link
 *       io.kvindex.redis.RedisUnavailableException}); real errors throw {@link
 *       io.kvindex.redis.RedisRealException} (or a subclass).
 *   <li>A model's blocks are keyed in one {@link KeyMode} fleet-wide: writers pass it with every
 *       batch, readers with every lookup.
 * </ul>
 *
 * <p>Implementations are thread-safe.
 */
public interface PrefixIndex extends AutoCloseable {

  /** The longest note of a resync request ({@link #requestResyncAsync}), in characters. */
  int MAX_RESYNC_NOTE = 256;

  /**
   * The longest a speculative route may count ({@link #speculateAsync}): one minute. The script
   * that records routes refuses a longer one, and lookups ignore entries (routers' Redis users may
   * write them directly) whose deadline lies further ahead than this.
   */
  Duration MAX_SPECULATIVE_TTL = Duration.ofMinutes(1);

  /**
   * {@code ttl} if a speculative route may last that long: at least 1 ms, at most {@link
   * #MAX_SPECULATIVE_TTL}.
   *
   * @throws IllegalArgumentException naming {@code name} otherwise
   */
  static Duration checkSpeculativeTtl(Duration ttl, String name) {
    Check.atLeastOneMilli(ttl, name);
    if (ttl.compareTo(MAX_SPECULATIVE_TTL) > 0) {
      throw new IllegalArgumentException(
          name
              + " must be at most "
              + MAX_SPECULATIVE_TTL.toMillis()
              + " ms (the longest a speculative route may count: a route is a hint until the"
              + " engine's own events arrive), got "
              + ttl.toMillis()
              + " ms");
    }
    return ttl;
  }

  /** A builder for a Redis-backed index (or, for tests, the in-memory model). */
  static PrefixIndexBuilder builder() {
    return new PrefixIndexBuilder();
  }

  /**
   * Applies one batch of a stream's events, in order and exactly once: a batch of more than the
   * configured chunk of blocks is applied in several calls, each atomic and each changing nothing
   * when retried; a lookup meanwhile sees the batch partly applied, as it would see the engine's
   * steps. The watermark moves with the last chunk.
   *
   * @param mode how the stream's model keys its blocks
   * @param seq the batch's sequence number, 0 to 2^53
   * @param lease the stream's lease from {@link #acquireLease}
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
   * {@link BatchCheck#chunkBlocks} counts). One atomic call, so a writer behind its engine pays one
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
   * {@link #collectGarbage}. Also forgets the stream's engine-to-token key map.
   */
  default PurgeStatus purge(StreamId stream, Lease lease, PurgeMode mode) {
    return Await.of(purgeAsync(stream, lease, mode));
  }

  /** {@link #purge} without blocking. */
  CompletableFuture<PurgeStatus> purgeAsync(StreamId stream, Lease lease, PurgeMode mode);

  /** How much of the prompt each candidate pod holds. */
  default LookupResult lookup(LookupRequest request) {
    return Await.of(lookupAsync(request));
  }

  /** {@link #lookup} without blocking: one script per index group, all in flight at once. */
  CompletableFuture<LookupResult> lookupAsync(LookupRequest request);

  /**
   * How much of the prompt each candidate pod holds, for a hybrid model ({@link
   * CacheLayout#hybrid}): per pod the hit vLLM's coordinator would compute on the pod's cache (its
   * best rank), in blocks of {@code hashBlockSize} tokens, with each cache group's own figure in
   * {@link PodMatch#groupTokens}. The full-attention group is read as {@link #lookupAsync(
   * LookupRequest)} reads a group, the other groups' fields beside it in the same read.
   *
   * @param request the prompt's keys, one per {@code hashBlockSize} tokens ({@link
   *     LookupRequest#cacheGroup} is ignored: the layout names the groups)
   * @param layout the model's groups, scorable ({@link CacheLayout#unscorable(int)} empty)
   * @param hashBlockSize tokens per key of the request
   * @param promptTokens the prompt's tokens: the hit is at most one fewer
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    throw new UnsupportedOperationException(
        "this index does not score hybrid models; use the Redis index");
  }

  /**
   * {@link #lookupAsync(LookupRequest, CacheLayout, int, int)} by a rule made already: the one a
   * model's engines apply when they run a draft model ({@link HybridHit#eagle}), which one-group
   * models need as well.
   *
   * @param rule the model's hit rule, its layout scorable
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, HybridHit rule, int promptTokens) {
    if (rule.eagle() != HybridHit.Eagle.OFF) {
      throw new UnsupportedOperationException(
          "this index does not score draft models; use the Redis index");
    }
    return lookupAsync(request, rule.layout(), rule.hashBlockSize(), promptTokens);
  }

  /**
   * {@link #lookupAsync(LookupRequest, CacheLayout, int, int)}, waiting for the answer (decoded on
   * the calling thread, as {@link #lookup(LookupRequest)} is).
   *
   * @throws UnsupportedOperationException if the index cannot score hybrid models
   */
  default LookupResult lookup(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    return Await.of(lookupAsync(request, layout, hashBlockSize, promptTokens));
  }

  /**
   * Records {@code model}'s cache-group layout as its engines' events show it, replacing the one
   * recorded before (a model redeployed with other groups). Best effort: one small write.
   *
   * @return true once recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteCacheLayout(String model, CacheLayout layout);

  /**
   * The cache-group layout the ingesters last recorded for {@code model}: one read.
   *
   * @return the layout, empty when none is recorded (no store seen yet, or a model of one group
   *     before any ingester of this version saw it); a failed future if Redis did not answer
   */
  CompletableFuture<Optional<CacheLayout>> cacheLayout(String model);

  /**
   * Takes the stream's lease if it is free or already {@code owner}'s (then its expiry is moved to
   * now + ttl and the same lease returned).
   *
   * @param owner a name unique to this process incarnation (a restarted process must not reuse it)
   * @return the lease, or empty if another owner holds it or Redis was unavailable
   */
  Optional<Lease> acquireLease(StreamId stream, String owner, Duration ttl);

  /**
   * Moves the lease's expiry to now + ttl if it is still held as {@code lease}.
   *
   * @return false if the lease is lost (or Redis was unavailable: treat it as lost)
   */
  boolean renewLease(StreamId stream, Lease lease, Duration ttl);

  /**
   * Gives the lease up if it is still held as {@code lease}; true if it did. A lease given up is
   * counted in {@link #leaseReleases()}.
   */
  boolean releaseLease(StreamId stream, Lease lease);

  /**
   * How many leases the index's replicas have given up (a replica shedding streams over its fair
   * share, or stopping): one read. A replica short of its share watches it to take a stream given
   * up at once, rather than at its next coordination round.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  long leaseReleases();

  /** Blocks one speculative route records at most: its prompt's first. */
  int MAX_ROUTE_BLOCKS = 1024;

  /**
   * Records that a request whose prompt has {@code blockKeys} was routed to {@code pod}: lookups of
   * the pod while it is live see the blocks their prompt shares with the route on it (as GPU
   * blocks, flagged {@link PodMatch#speculative()}) before the engine reports them. The blocks
   * credited are exact to within 15: in each segment (16 blocks up to block 256) or span (256
   * blocks) of the route, its head, then its blocks at each multiple of 16 and its last, as far as
   * the prompt has the same keys there. A route lives {@code ttl}, enforced by Redis itself (the
   * routes carry a PEXPIRE), so routes vanish even if every router dies. Confirmed entries
   * supersede them: a block the pod's engine reported is not speculative. A route records its first
   * {@value #MAX_ROUTE_BLOCKS} blocks at most, and only for a pod with a live record; an index
   * keeps a bounded number of routes per group (the latest few pods per segment, the segments whose
   * routes expire last), so routes to made-up pods cost nothing and floods cost a bounded amount.
   *
   * @param blockKeys the prompt's block keys (read, never kept)
   * @param ttl how long the route counts, 1 ms to {@link #MAX_SPECULATIVE_TTL}
   * @return true if recorded (or empty), false if the pod has no live record or Redis was
   *     unavailable (best effort; nothing to heal)
   */
  CompletableFuture<Boolean> speculateAsync(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl);

  /**
   * Notes in the index, for {@code kvindex inspect}, how this reader keys a model's prompts.
   * Writers note their key modes themselves, as they apply; a router notes its models when it
   * starts. Best effort: one small write, to a key a router's Redis user may write.
   *
   * @param model the model, or null for every model the reader has no keys of its own for
   * @param modelKeys the keys in the command line's form: {@code engine:<algorithm>:<seed>:<block
   *     size>} or {@code token:<block size>}
   * @return true once noted, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteReaderKeys(String model, String modelKeys);

  /**
   * The keys routers last noted ({@link #noteReaderKeys}) for each model: model to keys in the
   * command line's form, the model {@code ""} for routers' default keys. One read, for the
   * ingesters' key check.
   *
   * @return the notes; empty when Redis did not answer
   */
  CompletableFuture<Optional<Map<String, String>>> readerKeys();

  /**
   * Keeps what the ingesters' key check found for {@code model}, replacing the model's previous
   * note. Best effort: one small write.
   *
   * @return true once kept, false if Redis was unavailable
   */
  CompletableFuture<Boolean> noteKeyCheck(String model, KeyCheckNote note);

  /**
   * What the ingesters' key check last found for {@code model}: one read.
   *
   * @return the note, empty when there is none; a failed future if Redis did not answer
   */
  CompletableFuture<Optional<KeyCheckNote>> keyCheck(String model);

  /**
   * The pod records of {@code pods} as the index holds them now, for explaining a lookup: whether
   * each pod has one and whether it is live. One read per index group; not for the request path.
   *
   * @return per pod, in the order given; empty if Redis did not answer
   */
  CompletableFuture<Optional<List<PodLiveness>>> liveness(String model, List<String> pods);

  /**
   * The pods of {@code model} that are live now (their liveness deadline has not passed), in no
   * particular order: the candidates of a router that was not told its pods. One script per index
   * group, whose cost grows with the number of pods in the group; the Redis index reuses what it
   * read for a second, so a pod may join or leave the list up to a second late.
   *
   * @return the pod names, or empty if Redis stayed unavailable for some group within the lookup
   *     budget
   */
  CompletableFuture<Optional<List<String>>> livePods(String model);

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

  /**
   * One bounded garbage-collection step in an index group (one script call that examines about
   * {@code budget} block fields). Call it in a loop until {@link GcResult#done()}.
   *
   * @param budget 1 to {@link PrefixIndexBuilder#MAX_GC_BUDGET}
   * @throws IllegalArgumentException for a budget outside that range
   */
  GcResult collectGarbage(int group, int budget);

  /**
   * One bounded step of forgetting pods that have left: the stream records (watermark, holder slot)
   * and pod records of pods whose liveness deadline passed more than the departed retention ago
   * ({@link PrefixIndexBuilder#departedRetention}), examining about {@code budget} records. A
   * forgotten stream's slot is retired as a purge would retire it, and its engine-to-token key map
   * is dropped; a pod that comes back starts afresh. Call it in a loop until {@link
   * SweepResult#done()}; without it, every pod ever seen keeps a few records forever.
   */
  SweepResult sweepDeparted(int group, int budget);

  /**
   * Registers an ingester replica as alive until now + ttl and tells how many replicas are alive
   * (itself included), so that replicas can share the streams fairly. A replica name belongs to the
   * index instance that registered it while its entry lives.
   *
   * @throws ReplicaConflictException if another live process (another index instance) holds the
   *     name: leases name their owner, so two processes under one name would pass each other's
   *     fencing
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  int registerReplica(String replica, Duration ttl);

  /**
   * Removes a replica from the live set at once (a graceful stop).
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  void deregisterReplica(String replica);

  /**
   * The engine incarnation (its process start time, as its {@code /metrics} reports it) the
   * stream's entries came from, as its owners last recorded it ({@link #recordIncarnation}): a new
   * owner compares it with what the engine reports now, since a changed incarnation means the
   * engine restarted and lost its cache even when its sequence numbers do not show it.
   *
   * @return the incarnation recorded, or empty if none
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<String> incarnation(StreamId stream);

  /**
   * Records the stream's engine incarnation for {@code ttl}, if the record holds {@code expected}
   * (null: none) or already holds {@code incarnation}: a compare-and-set, so that a retry after a
   * lost reply answers as the first attempt did, and a record another owner changed meanwhile is
   * never replaced unseen. Each stream has its own record, so a pod's ranks never move each
   * other's.
   *
   * @return true if the record holds {@code incarnation} now, false if it held another one
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  boolean recordIncarnation(StreamId stream, String expected, String incarnation, Duration ttl);

  /**
   * Asks the ingester that owns the pod's streams to resync them: purge what the index holds of
   * them, then replay what the engine's replay ring still covers. One request stands per pod per
   * {@code interval}, whoever asks (routers judging the pod from their own observations make it;
   * the first of them records it), so a pod is resynced at most once per interval.
   *
   * @param note who asked and why, for the owner's log; at most {@value #MAX_RESYNC_NOTE}
   *     characters
   * @param interval how long the request stands and keeps others out, at least 1 ms
   * @return whether this call's request stands, one already did, or Redis was unavailable
   * @throws IllegalArgumentException for a longer note
   */
  CompletableFuture<ResyncStatus> requestResyncAsync(
      String model, String pod, String note, Duration interval);

  /**
   * Takes the standing resync request of the stream's pod, once per stream: the owner of the stream
   * calls this, then resyncs it (each rank of the pod takes it once, whichever replica owns that
   * rank). The request keeps standing, taken, until its interval ends. A stream takes no request
   * within {@code spacing} of the last one it took (the index records when, for every owner), so a
   * pod is resynced at most once per spacing whatever routers ask and however often: a request made
   * sooner is taken once the spacing has passed, if it still stands.
   *
   * @param spacing the least time between two resyncs of the stream, at least 1 ms
   * @return the request's note, or empty if none stands, this stream took it already, or it took
   *     the last one less than {@code spacing} ago
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<String> takeResync(StreamId stream, Duration spacing);

  /**
   * Marks the pod's evictions as inferred until now + {@code ttl}: its engine does not publish them
   * all, so the owner of each of its streams keeps a model of the engine's cache and removes what
   * the model evicts. Routers that find the mark send each observed request's blocks ({@link
   * #touchAsync}), which keep the model's order of use true. The owners refresh the mark while they
   * infer.
   *
   * @param capacityBlocks the engine's KV-cache capacity in blocks, the model's size; at least 1
   * @return true if marked, false if Redis was unavailable
   */
  boolean markEvictionsInferred(String model, String pod, int capacityBlocks, Duration ttl);

  /**
   * The capacity under which the pod's evictions are inferred ({@link #markEvictionsInferred}), or
   * empty when they are not. Completes exceptionally with a {@link
   * io.kvindex.redis.RedisUnavailableException} when Redis did not answer within the write retry
   * budget.
   */
  CompletableFuture<OptionalInt> evictionsInferred(String model, String pod);

  /** Blocks one touch carries at most: the prompt's first ones. */
  int MAX_TOUCH_BLOCKS = 16_384;

  /** Touches a pod keeps at most: older ones are dropped as new ones come. */
  int MAX_TOUCHES = 4096;

  /**
   * Bytes of touches a pod keeps at most (each touch counted as its block keys' 8 bytes each plus
   * {@value #TOUCH_OVERHEAD_BYTES}): older ones are dropped as new ones come, so a pod whose
   * touches nobody reads holds at most this much (4 MiB).
   */
  int MAX_TOUCH_BYTES = 4 << 20;

  /** What a touch counts towards {@link #MAX_TOUCH_BYTES} beside its block keys. */
  int TOUCH_OVERHEAD_BYTES = 64;

  /**
   * Bytes of touches one {@link #touches} read returns at most, past its first touch (256 KiB): a
   * read holds Redis for about as long as this takes to copy.
   */
  int MAX_TOUCH_READ_BYTES = 256 << 10;

  /**
   * How long a reader's cursor holds back the trimming of its pod's touches after its last read (1
   * minute): a reader gone longer than this no longer keeps the touches it has not read.
   */
  Duration TOUCH_READER_TTL = Duration.ofMinutes(1);

  /**
   * Records that an observed request went to {@code pod}, whose evictions are inferred, with the
   * prompt's block keys, how many of them the engine served from its cache and the prediction's
   * error. The owners of the pod's streams read them in order ({@link #touches}) and restore from
   * them only what their own model removed, within the cached depth; what every current reader has
   * read is dropped. A pod keeps its latest {@value #MAX_TOUCHES} touches and at most {@value
   * #MAX_TOUCH_BYTES} bytes of them for {@code ttl} after the last one. Best effort, never blocks.
   *
   * @param blockKeys the prompt's block keys, block 0 first; only the first {@value
   *     #MAX_TOUCH_BLOCKS} are recorded (read, never kept)
   * @param errorBlocks the prediction's error for the request, in blocks (see {@link Touch})
   * @param cachedBlocks the blocks the engine reported cached, from block 0, at least 0
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> touchAsync(
      String model,
      String pod,
      int rank,
      long[] blockKeys,
      int errorBlocks,
      int cachedBlocks,
      Duration ttl);

  /**
   * The touches of the stream's pod recorded after {@code cursor}, oldest first, at most {@code
   * max} and about {@link #MAX_TOUCH_READ_BYTES}. A null cursor reads none and returns the cursor
   * of the latest touch, from which a reader that starts now goes on. Each read notes the stream's
   * cursor, and the touches every reader of the pod (each rank that read in the last {@link
   * #TOUCH_READER_TTL}) has read are dropped.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Touches touches(StreamId stream, String cursor, int max);

  /**
   * Leaves the stream's eviction model, as far as its next owner needs it, in the index for {@code
   * ttl} (its owner refreshes it while it infers): a new owner of the stream reads it ({@link
   * #inferenceHandover}). Best effort, never blocks.
   *
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> handOverInferenceAsync(
      StreamId stream, InferenceHandover handover, Duration ttl);

  /**
   * What the stream's former owner left of its eviction model ({@link #handOverInferenceAsync}), or
   * empty when none stands.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<InferenceHandover> inferenceHandover(StreamId stream);

  /**
   * Records how far the stream's owner is behind its engine, for {@code ttl}: routers read the
   * reports of a pod's streams ({@link #ingestLag}) before they take a prediction error for drift.
   * Best effort, never blocks.
   *
   * @param lag how far behind, at least 0
   * @return true if recorded, false if Redis was unavailable
   */
  CompletableFuture<Boolean> reportLagAsync(StreamId stream, Duration lag, Duration ttl);

  /**
   * The latest report of each of the pod's streams that still stands ({@link #reportLagAsync}), in
   * no order; empty when none does (no owner reports, or none has yet). Completes exceptionally
   * with a {@link io.kvindex.redis.RedisUnavailableException} when Redis did not answer within the
   * write retry budget.
   */
  CompletableFuture<List<IngestLag>> ingestLag(String model, String pod);

  /**
   * Compares every group's epoch and node history with what this process last saw; a change means
   * Redis lost data or failed over, and the {@link #addResetListener listeners} hear of it (once
   * per change). Writers call it periodically: an idle stream would otherwise never notice. Runs
   * under the write retry policy.
   *
   * @return whether some group was reset
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  boolean checkIdentity();

  /**
   * Tells {@code listener} of every reset this process notices (in a write's answer, a lookup or
   * {@link #checkIdentity}), with the group and what changed. Listeners run on the thread that
   * noticed; they must be quick and must not block.
   */
  void addResetListener(ResetListener listener);

  /** Hears of index resets; see {@link #addResetListener}. */
  @FunctionalInterface
  interface ResetListener {
    /**
     * @param group the index group
     * @param what what changed: {@code epoch} (Redis lost the index) or {@code node} (Redis serves
     *     another node history: a failover)
     */
    void reset(int group, String what);
  }

  /** The index group a pod's streams live in. */
  int groupOf(String model, String pod);

  /** How many index groups the index has. */
  int groups();

  /** Releases what the index owns (not a connection it was given). */
  @Override
  void close();
}
