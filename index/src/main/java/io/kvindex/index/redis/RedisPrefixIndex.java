package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
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
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.RedisRealException;
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The Redis-backed {@link PrefixIndex}; see the implementation notes above. Thread-safe. */
public final class RedisPrefixIndex implements PrefixIndex {
  private static final Logger log = LoggerFactory.getLogger(RedisPrefixIndex.class);

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
   * full-attention chain and lookups read them by segments.
   */
  static final int FORMAT = 5;

  /**
   * Blocks one speculative route records at most: its first ones (16 segments and 3 spans, so a
   * route writes and a lookup reads at most 19 fields of routes). A route is a hint for the moment
   * until the engine's own events arrive.
   */
  static final int SPECULATIVE_BLOCKS_PER_ROUTE = PrefixIndex.MAX_ROUTE_BLOCKS;

  /**
   * Fields a group's speculative routes hold at most (segments and spans routed through): past it,
   * those whose routes expire first are dropped.
   */
  static final int SPECULATIVE_FIELDS = 16_384;

  /** Pods one segment's or span's speculative routes name at most: the latest routed there. */
  static final int SPECULATIVE_PODS_PER_FIELD = 8;

  /** Blocks of a route between two of the keys kept for it (and its last block's key). */
  static final int SPECULATIVE_KEY_EVERY = 16;

  /** How long a model's live pods, read for a lookup without candidates, are reused. */
  static final Duration LIVE_PODS_REUSE = Duration.ofSeconds(1);

  /** Models whose live pods are kept at most; past it the kept lists are dropped. */
  static final int LIVE_PODS_MODELS = 1024;

  /** A model's live pods as read, and until when they are reused. */
  private record LivePods(CompletableFuture<Optional<List<String>>> pods, long untilNanos) {}

  private final Map<String, LivePods> livePods = new ConcurrentHashMap<>();

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final ScriptRunner reads;
  private final RedisLookups lookups;
  private final RedisLeases leases;
  private final RedisResyncs resyncs;
  private final RedisInference inference;
  private final RedisLags lags;
  private final RedisMaintenance maintenance;
  private final IndexIdentity identity;
  private final RedisNotes notes;
  private final RedisStreamWrites streams;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;

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
    this.reads = connector.scripts(lookup, loadsScripts);
    this.commands = connector.commands();
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
    this.lags = new RedisLags(keys, writes);
    this.maintenance = new RedisMaintenance(config, keys, writes, connector.commands());
    this.notes = new RedisNotes(config, keys, writes);
    this.streams =
        new RedisStreamWrites(
            config,
            keys,
            writes,
            notes,
            identity,
            this::initAsync,
            betweenChunks,
            this::cacheLayout);
    identity.addListener(
        (group, what) -> {
          if (what.equals("epoch")) {
            notes.forget();
          }
        });
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
    index.checkGroups();
    if (loadsScripts) {
      index.preloadScripts();
    }
    return index;
  }

  /**
   * Loads every script into Redis's script cache now, without waiting: compiling one takes about a
   * millisecond of Redis's one thread, which the first call of each would otherwise pay in the
   * middle of traffic (the first purge's and GC's calls were a clear's longest commands). Optional:
   * a call still loads its script on NOSCRIPT (a restarted or new node), so a refusal is logged and
   * the index works on.
   */
  private void preloadScripts() {
    writes
        .preload(Scripts.all().toArray(new LuaScript[0]))
        .whenComplete(
            (outcome, error) -> {
              if (error != null || !outcome.isDone()) {
                log.info(
                    "index '{}': scripts not preloaded ({}); each compiles on its first call"
                        + " instead{}",
                    config.indexName(),
                    error != null ? error.getMessage() : outcome,
                    refused(error) ? ". To preload them, grant this Redis user +script|load" : "");
              }
            });
  }

  /** A refusal by the server's ACL, as opposed to a node that could not be reached. */
  private static boolean refused(Throwable error) {
    Throwable e = error instanceof CompletionException ? error.getCause() : error;
    return e instanceof RedisRealException real && "NOPERM".equals(real.code());
  }

  private void checkGroups() {
    for (int g = 0; g < config.groups(); g++) {
      Optional<String> recorded = recorded(g);
      identity.epochIs(g, recorded.isPresent() ? recorded.get() : init(g));
    }
  }

  /**
   * The group's epoch, its group count checked, if init.lua would change nothing (meta records both
   * and the blocks hash has the epoch): then opening writes nothing, and a reader whose Redis user
   * may not write the index (a router's) opens it. Empty when the group needs init. Read under the
   * write policy, as init is: a cluster's node connections may still be coming up.
   */
  private Optional<String> recorded(int g) {
    CompletableFuture<RedisOutcome<List<KeyValue<byte[], byte[]>>>> meta =
        writes
            .calls()
            .<List<KeyValue<byte[], byte[]>>>call(
                "open",
                () ->
                    commands.hmget(keys.meta(g), ascii("groups"), ascii("epoch"), ascii("format")))
            .toCompletableFuture();
    CompletableFuture<RedisOutcome<byte[]>> copy =
        writes
            .calls()
            .<byte[]>call("open", () -> commands.hget(keys.blocks(g), KeySchema.EPOCH_FIELD))
            .toCompletableFuture();
    List<KeyValue<byte[], byte[]>> recorded = Await.of(meta).orElseThrow();
    byte[] blocksEpoch = Await.of(copy).orElseThrow();
    if (recorded.stream().anyMatch(field -> !field.hasValue()) || blocksEpoch == null) {
      return Optional.empty();
    }
    String epoch = checkedEpoch(recorded.stream().<Object>map(KeyValue::getValue).toList());
    return epoch.equals(text(blocksEpoch)) ? Optional.of(epoch) : Optional.empty();
  }

  /**
   * Records the group count, an epoch and the format if the group has none, and returns the epoch
   * it has.
   *
   * @throws IndexMismatchException if the index exists with another group count or format
   */
  private String init(int g) {
    try {
      return Await.of(initAsync(g));
    } catch (RedisUnavailableException e) {
      if (writes.loadsScripts() || !e.lastError().reason().equals("noscript")) {
        throw e;
      }
      throw new IndexNotFoundException(
          "index '"
              + config.indexName()
              + "' is not in this Redis (no ingester has created it yet, or Redis lost it), and"
              + " its scripts are not loaded; a router neither creates an index nor loads scripts:"
              + " start an ingester of the index on this Redis first (it does both), then this"
              + " router",
          e);
    }
  }

  private CompletableFuture<String> initAsync(int g) {
    return new InitCall(g, config.groups(), IndexIdentity.newEpoch(), FORMAT)
        .on(keys)
        .<List<Object>>run(writes, ScriptOutputType.MULTI)
        .thenApply(outcome -> checkedEpoch(outcome.orElseThrow()));
  }

  /** The epoch of an init reply or a meta read (groups, epoch, format), the rest checked. */
  private String checkedEpoch(List<Object> reply) {
    checkFormat(Integer.parseInt(text(reply.get(2))));
    int storedGroups = Integer.parseInt(text(reply.get(0)));
    if (storedGroups != config.groups()) {
      throw new IndexMismatchException(
          "index '"
              + config.indexName()
              + "' was created with "
              + storedGroups
              + " groups but this configuration says "
              + config.groups()
              + "; configure groups="
              + storedGroups
              + " or use another index name");
    }
    return text(reply.get(1));
  }

  private void checkFormat(int stored) {
    if (stored != FORMAT) {
      throw new IndexMismatchException(
          "index '"
              + config.indexName()
              + "' has index format "
              + stored
              + " but this kvindex reads and writes format "
              + FORMAT
              + ": processes of two formats cannot share an index. Run the release its other"
              + " ingesters and routers run, or give this release another index name (index-name)"
              + " and move ingesters, then routers, over to it (docs/operations.md, \"Rolling updates\")");
    }
  }

  /**
   * Under the write policy, not the routing path's: a writer's maintenance call, which may wait out
   * a busy moment of a loaded host (the routing path's 5 ms gave up in the middle of ingesters'
   * coordination rounds).
   */
  @Override
  public boolean checkIdentity() {
    boolean changed = false;
    for (int g = 0; g < config.groups(); g++) {
      IndexIdentity.Reply reply =
          IndexIdentity.Reply.of(
              Await.of(
                      new IdentityCall(g)
                          .on(keys)
                          .<List<Object>>run(writes, ScriptOutputType.MULTI))
                  .orElseThrow());
      changed |= identity.epochIs(g, reply.epoch().isEmpty() ? init(g) : reply.epoch());
      changed |= identity.nodeIs(g, reply.liveNode(), reply.trusted());
    }
    return changed;
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

  /** One HMGET of the pods hash per group, beside the group's clock estimate. */
  @Override
  public CompletableFuture<Optional<List<PodLiveness>>> liveness(String model, List<String> pods) {
    Check.name(model, "model");
    List<CompletableFuture<PodLiveness>> each = new ArrayList<>(pods.size());
    for (String pod : pods) {
      int g = keys.groupOf(model, Check.name(pod, "pod"));
      CompletableFuture<byte[]> record =
          commands.hget(keys.pods(g), KeySchema.podField(model, pod)).toCompletableFuture();
      each.add(
          record.thenCombine(
              lookups.clock.nowMillis(g),
              (rec, now) ->
                  new PodLiveness(
                      pod, rec != null && rec.length >= 8 ? Bytes.deadline(rec) : null, now)));
    }
    return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
        .thenApply(done -> Optional.of(each.stream().map(CompletableFuture::join).toList()))
        .exceptionally(failure -> Optional.empty());
  }

  @Override
  public CompletableFuture<Optional<List<String>>> livePods(String model) {
    Check.name(model, "model");
    long now = System.nanoTime();
    LivePods kept = livePods.get(model);
    if (kept != null
        && kept.untilNanos() - now > 0
        && (!kept.pods().isDone() || kept.pods().getNow(Optional.empty()).isPresent())) {
      return kept.pods();
    }
    if (livePods.size() >= LIVE_PODS_MODELS) {
      livePods.clear();
    }
    CompletableFuture<Optional<List<String>>> read = readLivePods(model);
    livePods.put(model, new LivePods(read, now + LIVE_PODS_REUSE.toNanos()));
    return read;
  }

  /** Reads every group's pods hash (one HGETALL each): at most once a second per model. */
  private CompletableFuture<Optional<List<String>>> readLivePods(String model) {
    byte[] prefix = KeySchema.modelPrefix(model);
    List<CompletableFuture<RedisOutcome<List<byte[]>>>> parts = new ArrayList<>();
    for (int g = 0; g < config.groups(); g++) {
      parts.add(new PodsCall(g, model).on(keys).run(reads, ScriptOutputType.MULTI));
    }
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
        .thenApply(
            x -> {
              List<String> pods = new ArrayList<>();
              for (CompletableFuture<RedisOutcome<List<byte[]>>> part : parts) {
                RedisOutcome<List<byte[]>> outcome = part.join();
                if (!outcome.isDone()) {
                  return Optional.empty();
                }
                outcome.orElseThrow().forEach(f -> pods.add(KeySchema.podOf(f, prefix.length)));
              }
              return Optional.of(pods);
            });
  }

  @Override
  public CompletableFuture<Boolean> speculateAsync(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.notNull(mode, "mode");
    Check.notNull(blockKeys, "blockKeys");
    PrefixIndex.checkSpeculativeTtl(ttl, "ttl");
    if (blockKeys.length == 0) {
      return CompletableFuture.completedFuture(true);
    }
    return new SpeculateCall(model, mode, pod, blockKeys, cacheGroup, ttl.toMillis())
        .on(keys)
        .<Long>run(writes, ScriptOutputType.INTEGER)
        .thenApply(outcome -> outcome.isDone() && outcome.orElseThrow() > 0);
  }

  @Override
  public CompletableFuture<Boolean> noteReaderKeys(String model, String modelKeys) {
    if (model != null) {
      Check.name(model, "model");
    }
    return notes.reader(model, Check.notBlank(modelKeys, "modelKeys"));
  }

  /** One HGETALL of the routers' notes; the latest note of each model wins. */
  @Override
  public CompletableFuture<Optional<Map<String, String>>> readerKeys() {
    return writes
        .calls()
        .<Map<byte[], byte[]>>call("notes", () -> commands.hgetall(keys.readerNotes()))
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? Optional.of(latest(outcome.orElseThrow()))
                    : Optional.<Map<String, String>>empty())
        .toCompletableFuture();
  }

  private static Map<String, String> latest(Map<byte[], byte[]> notes) {
    Map<String, String> keysOf = new HashMap<>();
    Map<String, Long> at = new HashMap<>();
    notes.forEach(
        (field, value) -> {
          String[] note = KeySchema.readKeysNote(field);
          long when = value == null ? 0 : Long.parseLong(text(value));
          if (note != null && when >= at.getOrDefault(note[1], Long.MIN_VALUE)) {
            keysOf.put(note[1], note[0]);
            at.put(note[1], when);
          }
        });
    return keysOf;
  }

  @Override
  public CompletableFuture<Boolean> noteKeyCheck(String model, KeyCheckNote note) {
    return noteModelField(keys.keyChecks(), model, Check.notNull(note, "note").encode());
  }

  @Override
  public CompletableFuture<Boolean> noteCacheLayout(String model, CacheLayout layout) {
    streams.noteLayout(Check.name(model, "model"), Check.notNull(layout, "layout"));
    return noteModelField(
        keys.cacheLayouts(),
        model,
        Check.notNull(layout, "layout").encode().getBytes(StandardCharsets.US_ASCII));
  }

  /** Sets the model's field of a per-model note hash ({@code keychecks}, {@code layouts}). */
  private CompletableFuture<Boolean> noteModelField(byte[] key, String model, byte[] value) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return writes
        .calls()
        .<Boolean>call("note", () -> commands.hset(key, field, value))
        .thenApply(RedisOutcome::isDone)
        .toCompletableFuture();
  }

  @Override
  public CompletableFuture<Optional<CacheLayout>> cacheLayout(String model) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return commands
        .hget(keys.cacheLayouts(), field)
        .toCompletableFuture()
        .thenApply(
            value ->
                Optional.ofNullable(value)
                    .map(v -> CacheLayout.decode(new String(v, StandardCharsets.US_ASCII))));
  }

  @Override
  public CompletableFuture<LookupResult> lookupAsync(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    return hybridLookup(request, layout, hashBlockSize, promptTokens, Runnable::run);
  }

  @Override
  public LookupResult lookup(
      LookupRequest request, CacheLayout layout, int hashBlockSize, int promptTokens) {
    WaitingThreadExecutor caller = new WaitingThreadExecutor();
    return caller.await(hybridLookup(request, layout, hashBlockSize, promptTokens, caller));
  }

  private CompletableFuture<LookupResult> hybridLookup(
      LookupRequest request,
      CacheLayout layout,
      int hashBlockSize,
      int promptTokens,
      java.util.concurrent.Executor decode) {
    Check.notNull(request, "request");
    Check.atLeast(promptTokens, 0, "promptTokens");
    layout
        .unscorable(hashBlockSize)
        .ifPresent(
            why -> {
              throw new IllegalArgumentException("the layout cannot be scored: " + why);
            });
    return lookups.lookup(
        request, decode, new HybridHit(layout, hashBlockSize), hashBlockSize, promptTokens);
  }

  @Override
  public CompletableFuture<Optional<KeyCheckNote>> keyCheck(String model) {
    byte[] field = Check.name(model, "model").getBytes(StandardCharsets.UTF_8);
    return commands
        .hget(keys.keyChecks(), field)
        .toCompletableFuture()
        .thenApply(value -> Optional.ofNullable(value).map(KeyCheckNote::decode));
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
    Check.name(model, "model");
    Check.name(pod, "pod");
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    return Await.of(
            new HeartbeatCall(model, pod, ttlMs).on(keys).run(writes, ScriptOutputType.INTEGER))
        .isDone();
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
  public CompletableFuture<OptionalInt> evictionsInferred(String model, String pod) {
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
  public CompletableFuture<List<IngestLag>> ingestLag(String model, String pod) {
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

  private int group(StreamId stream) {
    return keys.groupOf(stream.model(), stream.pod());
  }
}
