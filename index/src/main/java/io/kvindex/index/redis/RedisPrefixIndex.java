package io.kvindex.index.redis;

import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.GcResult;
import io.kvindex.index.HybridHit;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.IndexMismatchException;
import io.kvindex.index.IndexNotFoundException;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.IngestLag;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodLiveness;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.ResyncStatus;
import io.kvindex.index.StreamId;
import io.kvindex.index.SweepResult;
import io.kvindex.index.Touches;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.redis.ScriptRunner;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/** The Redis-backed {@link PrefixIndex}; see the implementation notes above. Thread-safe. */
public final class RedisPrefixIndex implements PrefixIndex {
  /**
   * The index format this code reads and writes, recorded in every group's meta hash when the group
   * is created: processes of another format refuse to open the index (docs/operations.md, "Rolling
   * updates"). Raise it with every change that processes of the previous format would misread or
   * miswrite: 2 since locators carry chain positions and blocks from position 256 on are kept in
   * spans; 3 since a stream record names the batch in progress by its blocks done and its events'
   * digest, not by its chunks done; 4 since speculative routes are kept per segment in one hash per
   * group and touches are ids by offset, and (within the same release) lookups read the unlocated
   * heads and the blocks hash records the cluster node its data was written on; 5 since a hybrid
   * model's sparse groups' blocks (sliding window, chunked local, Mamba) are located by the
   * full-attention chain and lookups read them by segments; 6 since those groups' slots below chain
   * position 256 are kept in the full-attention group's segments.
   */
  static final int FORMAT = 6;

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final RedisLookups lookups;
  private final RedisLeases leases;
  private final RedisResyncs resyncs;
  private final RedisInference inference;
  private final RedisSpeculation speculation;
  private final RedisLags lags;
  private final RedisMaintenance maintenance;
  private final IndexIdentity identity;
  private final RedisNotes notes;
  private final RedisStreamWrites streams;
  private final RedisGroupInit groups;
  private final RedisLivePods livePods;

  private RedisPrefixIndex(
      IndexConfig config,
      RedisConnector connector,
      RetryPolicy writePolicy,
      RetryPolicy lookup,
      boolean loadsScripts,
      Supplier<? extends CompletionStage<?>> betweenChunks) {
    this.config = config;
    this.keys = new KeySchema(config.indexName(), config.groups());
    this.writes = connector.scripts(writePolicy, loadsScripts);
    ScriptRunner reads = connector.scripts(lookup, loadsScripts);
    this.identity =
        new IndexIdentity(config.indexName(), config.groups(), connector.meterRegistry());
    this.lookups =
        new RedisLookups(
            config,
            keys,
            reads,
            connector.commands(),
            connector.meterRegistry(),
            identity,
            connector::activations);
    this.leases = new RedisLeases(keys, writes, connector.commands());
    this.resyncs = new RedisResyncs(keys, writes);
    this.inference = new RedisInference(keys, writes);
    this.speculation = new RedisSpeculation(keys, writes);
    this.lags = new RedisLags(keys, writes);
    this.maintenance = new RedisMaintenance(config, keys, writes, connector.commands());
    this.notes = new RedisNotes(config, keys, writes, connector.commands(), identity);
    this.groups = new RedisGroupInit(config, keys, writes, connector.commands(), identity);
    this.livePods = new RedisLivePods(keys, writes, reads, connector.commands(), lookups.clock);
    this.streams =
        new RedisStreamWrites(
            config,
            keys,
            writes,
            notes,
            identity,
            groups::initAsync,
            betweenChunks,
            this::cacheLayoutAsync);
  }

  /**
   * Opens the index on {@code connector} (which the caller owns and closes after the index) and
   * checks the group count and the index format stored in Redis, recording them on first use.
   * {@link io.kvindex.index.PrefixIndex#builder()} is the way in; this is its Redis half. A batch
   * applied in several calls waits for what {@code betweenChunks} answers between two of them.
   *
   * @param loadsScripts whether this process loads the index's scripts (SCRIPT LOAD now, EVAL and
   *     SCRIPT LOAD when a node lacks them): ingesters do; routers run loaded scripts only
   * @throws IndexMismatchException if the index exists with another group count, or in an index
   *     format this code does not read and write
   * @throws IndexNotFoundException if the index needs creating and this process does not load
   *     scripts, and no process loaded them in time
   */
  public static RedisPrefixIndex open(
      IndexConfig config,
      RedisConnector connector,
      RetryPolicy writes,
      RetryPolicy lookups,
      boolean loadsScripts,
      Supplier<? extends CompletionStage<?>> betweenChunks) {
    RedisPrefixIndex index =
        new RedisPrefixIndex(
            Check.notNull(config, "config"),
            Check.notNull(connector, "connector"),
            Check.notNull(writes, "writes"),
            Check.notNull(lookups, "lookups"),
            loadsScripts,
            Check.notNull(betweenChunks, "betweenChunks"));
    index.groups.checkGroups();
    if (loadsScripts) {
      index.groups.preloadScripts();
    }
    return index;
  }

  @Override
  public boolean checkIdentity() {
    return groups.checkIdentity();
  }

  @Override
  public void addResetListener(ResetListener listener) {
    identity.addListener(Check.notNull(listener, "listener"));
  }

  @Override
  public CompletableFuture<ApplyResult> applyAsync(
      StreamId stream,
      KeyMode mode,
      long firstSeq,
      long seq,
      Lease lease,
      KvEventBatch batch,
      boolean staged) {
    return streams.apply(stream, mode, firstSeq, seq, lease, batch, staged);
  }

  @Override
  public Keys keys(StreamId stream, KeyMode mode) {
    return streams.keys(stream, mode);
  }

  @Override
  public CompletableFuture<ApplyResult> applyAsync(
      Keys keys, ApplyPlan plan, Lease lease, boolean staged) {
    return streams.apply(keys, plan, lease, staged);
  }

  @Override
  public int applyChunkBlocks() {
    return config.applyChunkBlocks();
  }

  @Override
  public boolean staged(StreamId stream) {
    return streams.staged(stream);
  }

  @Override
  public CompletableFuture<PurgeStatus> publishAsync(StreamId stream, Lease lease) {
    return streams.publish(stream, lease);
  }

  @Override
  public CompletableFuture<PurgeStatus> purgeAsync(StreamId stream, Lease lease, PurgeMode mode) {
    return streams.purge(stream, lease, mode);
  }

  /** Decodes the replies on the calling thread, not on lettuce's I/O thread. */
  @Override
  public LookupResult lookup(LookupRequest request) {
    WaitingThreadExecutor caller = new WaitingThreadExecutor();
    return caller.await(lookups.lookup(Check.notNull(request, "request"), caller));
  }

  @Override
  public CompletableFuture<LookupResult> lookupAsync(LookupRequest request) {
    return lookups.lookup(Check.notNull(request, "request"), Runnable::run);
  }

  @Override
  public CompletableFuture<Optional<List<PodLiveness>>> livenessAsync(
      String model, List<String> pods) {
    return livePods.liveness(model, pods);
  }

  @Override
  public CompletableFuture<Optional<List<String>>> livePodsAsync(String model) {
    return livePods.livePods(model);
  }

  @Override
  public CompletableFuture<Boolean> speculateAsync(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl) {
    return speculation.record(model, mode, pod, blockKeys, cacheGroup, ttl);
  }

  @Override
  public CompletableFuture<Boolean> noteReaderKeysAsync(String model, String modelKeys) {
    if (model != null) {
      Check.name(model, "model");
    }
    return notes.reader(model, Check.notBlank(modelKeys, "modelKeys"));
  }

  @Override
  public CompletableFuture<Optional<Map<String, String>>> readerKeysAsync() {
    return notes.readerKeys();
  }

  @Override
  public CompletableFuture<Boolean> noteKeyCheckAsync(String model, KeyCheckNote note) {
    return notes.keyCheck(model, note);
  }

  @Override
  public CompletableFuture<Boolean> noteCacheLayoutAsync(String model, CacheLayout layout) {
    streams.noteLayout(Check.name(model, "model"), Check.notNull(layout, "layout"));
    return notes.cacheLayout(model, layout);
  }

  @Override
  public CompletableFuture<Optional<CacheLayout>> cacheLayoutAsync(String model) {
    return notes.cacheLayout(model);
  }

  @Override
  public CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    HybridHit rule = lookups.rule(layout, hashBlockSize);
    return lookups.lookup(request, Runnable::run, rule, promptTokens);
  }

  @Override
  public CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, HybridHit rule, int promptTokens) {
    RedisLookups.scorable(Check.notNull(rule, "rule"));
    return lookups.lookup(request, Runnable::run, rule, promptTokens);
  }

  @Override
  public LookupResult lookup(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    HybridHit rule = lookups.rule(layout, hashBlockSize);
    WaitingThreadExecutor caller = new WaitingThreadExecutor();
    return caller.await(lookups.lookup(request, caller, rule, promptTokens));
  }

  @Override
  public LookupResult lookup(LookupRequest request, HybridHit rule, int promptTokens) {
    RedisLookups.scorable(Check.notNull(rule, "rule"));
    WaitingThreadExecutor caller = new WaitingThreadExecutor();
    return caller.await(lookups.lookup(request, caller, rule, promptTokens));
  }

  @Override
  public CompletableFuture<Optional<KeyCheckNote>> keyCheckAsync(String model) {
    return notes.keyCheck(model);
  }

  @Override
  public Optional<Lease> acquireLease(StreamId stream, String owner, Duration ttl) {
    return leases.acquire(stream, owner, ttl);
  }

  @Override
  public boolean renewLease(StreamId stream, Lease lease, Duration ttl) {
    return leases.renew(stream, lease, ttl);
  }

  @Override
  public boolean releaseLease(StreamId stream, Lease lease) {
    return leases.release(stream, lease);
  }

  @Override
  public long leaseReleases() {
    return leases.releases();
  }

  @Override
  public int registerReplica(String replica, Duration ttl) {
    return leases.registerReplica(replica, ttl);
  }

  @Override
  public void deregisterReplica(String replica) {
    leases.deregisterReplica(replica);
  }

  @Override
  public Optional<String> incarnation(StreamId stream) {
    return leases.incarnation(stream);
  }

  @Override
  public boolean recordIncarnation(
      StreamId stream, String expected, String incarnation, Duration ttl) {
    return leases.recordIncarnation(stream, expected, incarnation, ttl);
  }

  @Override
  public boolean heartbeat(String model, String pod, Duration ttl) {
    return livePods.heartbeat(model, pod, ttl);
  }

  @Override
  public CompletableFuture<ResyncStatus> requestResyncAsync(
      String model, String pod, String note, Duration interval) {
    return resyncs.request(model, pod, note, interval);
  }

  @Override
  public Optional<String> takeResync(StreamId stream, Duration spacing) {
    return resyncs.take(stream, spacing);
  }

  @Override
  public boolean markEvictionsInferred(String model, String pod, int capacityBlocks, Duration ttl) {
    return inference.mark(model, pod, capacityBlocks, ttl);
  }

  @Override
  public CompletableFuture<OptionalInt> evictionsInferredAsync(String model, String pod) {
    return inference.state(model, pod);
  }

  @Override
  public CompletableFuture<Boolean> touchAsync(
      String model,
      String pod,
      int rank,
      long[] blockKeys,
      int errorBlocks,
      int cachedBlocks,
      Duration ttl) {
    return inference.touch(model, pod, rank, blockKeys, errorBlocks, cachedBlocks, ttl);
  }

  @Override
  public Touches touches(StreamId stream, String cursor, int max) {
    return inference.read(stream, cursor, max);
  }

  @Override
  public CompletableFuture<Boolean> handOverInferenceAsync(
      StreamId stream, InferenceHandover handover, Duration ttl) {
    return inference.handOver(stream, handover, ttl);
  }

  @Override
  public Optional<InferenceHandover> inferenceHandover(StreamId stream) {
    return inference.handover(stream);
  }

  @Override
  public CompletableFuture<Boolean> reportLagAsync(StreamId stream, Duration lag, Duration ttl) {
    return lags.report(stream, lag, ttl);
  }

  @Override
  public CompletableFuture<List<IngestLag>> ingestLagAsync(String model, String pod) {
    return lags.read(model, pod);
  }

  @Override
  public OptionalLong watermark(StreamId stream) {
    return streams.watermark(stream);
  }

  @Override
  public GcResult collectGarbage(int group, int budget) {
    return maintenance.collectGarbage(group, budget);
  }

  @Override
  public SweepResult sweepDeparted(int group, int budget) {
    return maintenance.sweepDeparted(group, budget);
  }

  @Override
  public int groupOf(String model, String pod) {
    return keys.groupOf(Check.name(model, "model"), Check.name(pod, "pod"));
  }

  @Override
  public int groups() {
    return config.groups();
  }

  @Override
  public void close() {
    // Nothing of its own: the connector belongs to the caller.
  }
}
