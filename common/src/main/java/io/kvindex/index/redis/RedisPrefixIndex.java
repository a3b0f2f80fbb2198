package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.text;
import static io.kvindex.index.redis.Bytes.utf8;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyResult;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.BatchCheck;
import io.kvindex.index.BatchRejectedException;
import io.kvindex.index.GcResult;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.IndexMismatchException;
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
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.redis.ScriptRejectedException;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/*
 * Implementation notes.
 *
 * Key layout. Every key is kvindex:v1:{<index>/<group>}:<name>, <index> percent-encoded, so the
 * hash tag is the index and group and every script touches exactly one slot (all keys in KEYS);
 * the scripts run unchanged on Redis Cluster. A pod (model, pod) belongs to group
 * SHA-256(podField)[0..4) mod groups; all its ranks' streams live in that group. Per group:
 *   meta     HASH  groups and format (fixed at creation; format: the index format processes
 *                  must share, FORMAT), epoch, version (the stored version, recorded when init
 *                  creates the group), next (last slot handed out), pass (GC passes started),
 *                  cursor (HSCAN cursor of the pass in progress), fence (lease tokens), and notes
 *                  for inspection (RedisNotes): "note:mode:<mode>:" + lp(model) and
 *                  "note:segment-slots:<n>" -> the time a writer last noted them
 *   streams  HASH  streamField -> "<slot>|<watermark>" (slot 0 = none, watermark empty = none)
 *   pods     HASH  podField -> deadline ms (8 bytes BE) + (slot u16, rank u16)*
 *   blocks   HASH  block fields: scope(8) cacheGroup(2) blockKey(8) -> the block's locator
 *                  (9 bytes: its segment head's key, its offset; present once its chain position
 *                  is known, so a located value has odd length), then entries of 2 bytes:
 *                  slot (12 bits) | tiers (4 bits: GPU 1, CPU 2, STORAGE 4, OTHER 8);
 *                  segment fields: a head's block field + "/s" (20 bytes) -> slots of offset(1)
 *                  key(8) length(2) entries, one per located block of the 16-block segment the
 *                  head starts (more where chains branch; "O" once past segmentSlots);
 *                  plus fields of other lengths, which GC leaves alone:
 *                  "kvindex/holders/" + podField -> a copy of the pod record (the scripts
 *                  write both in the same call), so one HMGET reads holders and blocks at once;
 * *                  "kvindex/slots-generation" -> a counter (HINCRBY) that every script changing
 *                  which slots a pod record lists moves in the same call;
 *                  "kvindex/unlocated" -> how many block fields have no locator
 *   free     LIST  slots ready for reuse
 *   dead     HASH  retired slot -> the GC pass number at its death
 *   lease:<d> STRING "token:owner" with PX, d = hex SHA-256(streamField)[0..16)
 *   tmap:<d>  HASH  cacheGroup(2) engineHash(8) -> tokenKey(8) (token key mode only)
 *   spec:<p>  HASH  block field -> deadline ms (decimal): routes a router recorded for a pod
 *                  (speculate.lua), p = hex SHA-256(podField)[0..16); the key carries a PEXPIRE
 *                  as long as its longest-lived entry, so it vanishes with no process left
 *   resync:<p> HASH  a pod's resync request: n -> note, t<rank> -> 1 once that rank's owner took it;
 *                  PEXPIRE the request's interval (resync.lua; RedisResyncs)
 *   counts   HASH  "<slot>:blocks" and "<slot>:gpu|cpu|storage|other" -> the slot's entries, in
 *                  all and per tier (decimal): apply changes them with the entries, GC counts
 *                  the entries it strips out, so inspecting a stream never scans blocks;
 *                  "overflowed-segments" -> the segments apply marked "O"
 *   activity HASH  'a' + streamField -> ms of the last applied chunk; 'p' + streamField ->
 *                  "<ms>|<slot retired>" of the last purge; swept with the stream
 *   spec:models HASH (group 0) routers' notes "note:keys:" + lp(keys) + lp(model) -> ms
 *   spec:gate STRING the latest deadline (ms, decimal) of any speculative route of the group (the
 *                  speculation gate), with PX as long; a key of its own, so that routers write
 *                  only spec: keys (their ACL user may write nothing else)
 * podField = u32 len + model + u32 len + pod (UTF-8); streamField = podField + u32 rank; scope =
 * SHA-256("kvindex/scope/v1" + mode + lp(model))[0..8). No external name is ever part of a key name.
 *
 * Holders. Each stream that holds blocks owns a slot (1..4095) of its group; block entries name
 * slots, and the pod record maps the pod's live slots to ranks. A purge (or AllBlocksCleared)
 * removes the slot from the pod record and marks it dead: O(1), atomic, and no lookup can see the
 * old entries again because lookups only match slots listed in candidates' pod records. A slot is
 * reused only after a GC pass that started after its death has completed, so every old entry is
 * gone by then. GC is incremental: each call HSCANs about gcBudget fields and strips dead entries;
 * no script ever iterates a pod's whole content.
 *
 * Scripts. Every script is loaded with lib.lua prepended (Scripts): the clock, the deadline codec,
 * the lease check, the stream-record parse and the pod-record write (both copies, and the slots
 * generation) exist once. The replica registry (a sorted set under the tag {<index>/ingesters})
 * and the pods' engine incarnations (incarnation:<p>, in the pod's group) are written here too, so
 * that every key of the index is named in KeySchema alone.
 *
 * Writes. apply.lua checks the lease token (FENCED), then the watermark (DUPLICATE / GAP change
 * nothing), checks slot capacity before its first write (a failing script keeps its writes), then
 * applies the events in order and stores the watermark and the pod's liveness deadline (Redis
 * TIME) in the same atomic call. A stored block's locator follows from its parent's (a block with
 * no parent is block 0); a located block's entries, less dead slots', are copied into its
 * segment in the same call, and a block stored under a parent with no locator is counted as
 * unlocated until its field goes. Every script is idempotent for a retried duplicate: a batch that
 * ran but whose reply was lost comes back DUPLICATE.
 *
 * Reads (RedisLookups, GroupLookup). A lookup of a group is one plain HMGET of the blocks hash (with a GET of the
 * gate key beside it, on the same connection): the slots generation, the unlocated count, the holder records of the candidates the router has no
 * usable copy of, the first block's field (its locator shows that the keys start a segment) and
 * one segment field per 16 blocks of the prompt. While the group holds unlocated blocks, or when
 * the keys start inside a segment, it reads the prompt's first FIRST_CHUNK block fields instead,
 * and an overflowed segment's 16 block fields in place of its segment field. One command reads one key atomically, so it sees a purge
 * entirely or not at all, and works unchanged on a cluster. Each router keeps the records it read
 * per group with the generation they were read at; a cached record stands for the current one while
 * the generation read with the blocks is the same (no record's slots changed since) and its deadline
 * has not passed (deadlines only move later, except with a slot change): in steady state a lookup
 * reads only the gate, the generation and the blocks, and each candidate's record once per liveness
 * period. If the generation moved, the lookup reads again with every candidate's record. Java drops
 * expired records (by Redis's clock, estimated by ServerClock), matches entries to the live slots
 * and computes depths, tier depths and scores, stopping at the first block no candidate still
 * matching holds. Longer prompts continue in chunks of 4x while some candidate matches, each read
 * taking the generation again; if it moved, the lookup is redone as one lookup.lua call. While the
 * gate's deadline has not passed, lookups of the group run lookup.lua instead, which also reads the
 * candidates' spec hashes (a speculative block counts as GPU; a confirmed entry supersedes it).
 * The script moves every argument and value through Lua, which costs about twice the HMGET inside
 * Redis (BENCHMARKS.md has the figures), so it only runs while speculation is on. Groups are looked
 * up in parallel and merged.
 * Lookups use the router retry profile and report an incomplete result rather than fail. All
 * writers must move the generation: routers of this version must not share an index with
 * ingesters of an earlier one.
 */
/** The Redis-backed {@link PrefixIndex}; see the implementation notes above. Thread-safe. */
public final class RedisPrefixIndex implements PrefixIndex {
  /**
   * The index format this code reads and writes, recorded in every group's meta hash when the group
   * is created: processes of another format refuse to open the index (README, "Rolling updates").
   * Raise it with every change that processes of the previous format would misread or miswrite.
   */
  static final int FORMAT = 1;

  /** Fields a pod's speculative hash may hold before it is dropped and started afresh. */
  static final int SPECULATIVE_FIELD_LIMIT = 100_000;

  /**
   * Blocks one speculative route records at most: its first ones. A route is a hint for the moment
   * until the engine's own events arrive, and one call writes every field it records.
   */
  static final int SPECULATIVE_BLOCKS_PER_ROUTE = 1024;

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
  private final RedisMaintenance maintenance;
  private final IndexIdentity identity;
  private final RedisNotes notes;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;

  private RedisPrefixIndex(
      IndexConfig config, RedisConnector connector, RetryPolicy writePolicy, RetryPolicy lookup) {
    this.config = config;
    this.keys = new KeySchema(config.indexName(), config.groups());
    this.writes = connector.scripts(writePolicy);
    this.reads = connector.scripts(lookup);
    this.commands = connector.commands();
    this.identity =
        new IndexIdentity(config.indexName(), config.groups(), connector.meterRegistry());
    this.lookups =
        new RedisLookups(
            config, keys, reads, connector.commands(), connector.meterRegistry(), identity);
    this.leases = new RedisLeases(keys, writes);
    this.resyncs = new RedisResyncs(keys, writes);
    this.maintenance = new RedisMaintenance(config, keys, writes, connector.commands());
    this.notes = new RedisNotes(config, keys, writes);
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
   * {@link io.kvindex.index.PrefixIndex#builder()} is the way in; this is its Redis half.
   *
   * @throws IndexMismatchException if the index exists with another group count, or in an index
   *     format this code does not read and write
   */
  public static RedisPrefixIndex open(
      IndexConfig config, RedisConnector connector, RetryPolicy writes, RetryPolicy lookups) {
    RedisPrefixIndex index =
        new RedisPrefixIndex(
            Check.notNull(config, "config"),
            Check.notNull(connector, "connector"),
            Check.notNull(writes, "writes"),
            Check.notNull(lookups, "lookups"));
    index.checkGroups();
    return index;
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
    return Await.of(initAsync(g));
  }

  private CompletableFuture<String> initAsync(int g) {
    return writes
        .<List<Object>>run(
            Scripts.INIT,
            ScriptOutputType.MULTI,
            new byte[][] {keys.meta(g), keys.blocks(g)},
            ascii(config.groups()),
            ascii(IndexIdentity.newEpoch()),
            ascii(KeySchema.STORED_VERSION),
            ascii(FORMAT))
        .toCompletableFuture()
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
              + " and move ingesters, then routers, over to it (README, \"Rolling updates\")");
    }
  }

  @Override
  public boolean checkIdentity() {
    boolean changed = false;
    for (int g = 0; g < config.groups(); g++) {
      List<Object> reply =
          Await.of(
                  reads
                      .<List<Object>>run(
                          Scripts.IDENTITY, ScriptOutputType.MULTI, new byte[][] {keys.meta(g)})
                      .toCompletableFuture())
              .orElseThrow();
      String epoch = text(reply.get(0));
      changed |= identity.epochIs(g, epoch.isEmpty() ? init(g) : epoch);
      changed |= identity.nodeIs(g, text(reply.get(1)));
    }
    return changed;
  }

  @Override
  public void addResetListener(ResetListener listener) {
    identity.addListener(Check.notNull(listener, "listener"));
  }

  @Override
  public CompletableFuture<ApplyResult> applyAsync(
      StreamId stream, KeyMode mode, long seq, Lease lease, KvEventBatch batch, boolean staged) {
    Check.notNull(stream, "stream");
    Check.notNull(mode, "mode");
    Check.notNull(lease, "lease");
    Check.notNull(batch, "batch");
    BatchCheck.check(seq, batch.events());
    EventPacker.Packed packed =
        EventPacker.pack(mode, stream.model(), batch.events(), config.applyChunkBlocks());
    int g = group(stream);
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    byte[][] head = {
      KeySchema.streamField(stream),
      podField,
      KeySchema.rank(stream.dpRank()),
      ascii(seq),
      utf8(lease.toString()),
      ascii(config.podTtl().toMillis()),
      KeySchema.scope(mode, stream.model()),
      KeySchema.holderField(podField),
      ascii(config.segmentSlots()),
      null, // the epoch, read when each chunk is sent
      null, // the chunk
      ascii(packed.chunks().size()),
      ascii(staged ? 1 : 0)
    };
    byte[][] k = {
      keys.meta(g),
      keys.streams(g),
      keys.pods(g),
      keys.blocks(g),
      keys.free(g),
      keys.dead(g),
      keys.lease(stream),
      keys.tokenMap(stream),
      keys.counts(g),
      keys.activity(g)
    };
    notes.writer(g, stream.model(), mode);
    return applyChunks(new ChunkedApply(g, k, head, packed), 0)
        .thenCompose(result -> afterWrite(g, result, result.status() == ApplyStatus.RESET));
  }

  /** One batch on its way through its chunks, and what the applied chunks did. */
  private static final class ChunkedApply {
    final int group;
    final byte[][] keys;
    final byte[][] head;
    final EventPacker.Packed packed;
    int calls;
    int stored;
    int removed;
    int dropped;

    ChunkedApply(int group, byte[][] keys, byte[][] head, EventPacker.Packed packed) {
      this.group = group;
      this.keys = keys;
      this.head = head;
      this.packed = packed;
      this.dropped = packed.dropped();
    }

    /** Enough calls for every chunk to be sent twice and skipped once: past it, a bug. */
    boolean tooMany() {
      return ++calls > 3 * packed.chunks().size() + 1;
    }
  }

  private CompletableFuture<ApplyResult> applyChunks(ChunkedApply batch, int chunk) {
    if (batch.tooMany()) {
      return CompletableFuture.failedFuture(
          new IllegalStateException(
              "apply went round its chunks without finishing: a bug, please report it"));
    }
    List<byte[]> events = batch.packed.chunks().get(chunk);
    byte[][] args = Arrays.copyOf(batch.head, batch.head.length + events.size());
    args[9] = epochOf(batch.group);
    args[10] = ascii(chunk);
    for (int i = 0; i < events.size(); i++) {
      args[batch.head.length + i] = events.get(i);
    }
    return writes
        .<List<Object>>run(Scripts.APPLY, ScriptOutputType.MULTI, batch.keys, args)
        .toCompletableFuture()
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
              batch.stored += ((Long) reply.get(2)).intValue();
              batch.removed += ((Long) reply.get(3)).intValue();
              batch.dropped += ((Long) reply.get(4)).intValue();
              if (status.equals("CHUNK")) {
                return applyChunks(batch, ((Long) reply.get(5)).intValue());
              }
              ApplyStatus applied = ApplyStatus.valueOf(status);
              return CompletableFuture.completedFuture(
                  applied == ApplyStatus.APPLIED
                      ? new ApplyResult(applied, wm, batch.stored, batch.removed, batch.dropped)
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
    return initAsync(g)
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

  @Override
  public boolean staged(StreamId stream) {
    Check.notNull(stream, "stream");
    int g = group(stream);
    RedisOutcome<Long> outcome =
        Await.of(
            writes
                .<Long>run(
                    Scripts.STAGED,
                    ScriptOutputType.INTEGER,
                    new byte[][] {keys.streams(g), keys.pods(g)},
                    KeySchema.streamField(stream),
                    KeySchema.podField(stream.model(), stream.pod()),
                    KeySchema.rank(stream.dpRank()))
                .toCompletableFuture());
    return outcome.orElseThrow() == 1;
  }

  @Override
  public CompletableFuture<PurgeStatus> publishAsync(StreamId stream, Lease lease) {
    Check.notNull(stream, "stream");
    Check.notNull(lease, "lease");
    int g = group(stream);
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    return writes
        .<byte[]>run(
            Scripts.PUBLISH,
            ScriptOutputType.VALUE,
            new byte[][] {
              keys.meta(g), keys.streams(g), keys.pods(g), keys.blocks(g), keys.lease(stream)
            },
            KeySchema.streamField(stream),
            podField,
            KeySchema.rank(stream.dpRank()),
            utf8(lease.toString()),
            KeySchema.holderField(podField),
            epochOf(g),
            ascii(config.podTtl().toMillis()))
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? PurgeStatus.valueOf(text(outcome.orElseThrow()))
                    : PurgeStatus.SWALLOWED)
        .toCompletableFuture()
        .thenCompose(status -> afterWrite(g, status, status == PurgeStatus.RESET));
  }

  @Override
  public CompletableFuture<PurgeStatus> purgeAsync(StreamId stream, Lease lease, PurgeMode mode) {
    Check.notNull(stream, "stream");
    Check.notNull(lease, "lease");
    Check.notNull(mode, "mode");
    int g = group(stream);
    byte[][] k = {
      keys.meta(g),
      keys.streams(g),
      keys.pods(g),
      keys.dead(g),
      keys.lease(stream),
      keys.tokenMap(stream),
      keys.blocks(g),
      keys.activity(g)
    };
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    return writes
        .<byte[]>run(
            Scripts.PURGE,
            ScriptOutputType.VALUE,
            k,
            KeySchema.streamField(stream),
            podField,
            KeySchema.rank(stream.dpRank()),
            utf8(lease.toString()),
            ascii(mode == PurgeMode.RESET_WATERMARK ? 1 : 0),
            KeySchema.holderField(podField),
            epochOf(g))
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? PurgeStatus.valueOf(text(outcome.orElseThrow()))
                    : PurgeStatus.SWALLOWED)
        .toCompletableFuture()
        .thenCompose(status -> afterWrite(g, status, status == PurgeStatus.RESET));
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
      parts.add(
          reads
              .<List<byte[]>>run(
                  Scripts.PODS, ScriptOutputType.MULTI, new byte[][] {keys.pods(g)}, prefix)
              .toCompletableFuture());
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
    Check.atLeastOneMilli(ttl, "ttl");
    if (blockKeys.length == 0) {
      return CompletableFuture.completedFuture(true);
    }
    int recorded = Math.min(blockKeys.length, SPECULATIVE_BLOCKS_PER_ROUTE);
    byte[] prefix = KeySchema.fieldPrefix(KeySchema.scope(mode, model), cacheGroup);
    byte[][] args = new byte[2 + recorded][];
    args[0] = ascii(ttl.toMillis());
    args[1] = ascii(SPECULATIVE_FIELD_LIMIT);
    for (int i = 0; i < recorded; i++) {
      args[2 + i] = KeySchema.blockField(prefix, blockKeys[i]);
    }
    return writes
        .<Long>run(
            Scripts.SPECULATE,
            ScriptOutputType.INTEGER,
            new byte[][] {
              keys.speculative(model, pod), keys.speculationGate(keys.groupOf(model, pod))
            },
            args)
        .thenApply(RedisOutcome::isDone)
        .toCompletableFuture();
  }

  @Override
  public CompletableFuture<Boolean> noteReaderKeys(String model, String modelKeys) {
    if (model != null) {
      Check.name(model, "model");
    }
    return notes.reader(model, Check.notBlank(modelKeys, "modelKeys"));
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
  public int registerReplica(String replica, Duration ttl) {
    return leases.registerReplica(replica, ttl);
  }

  @Override
  public void deregisterReplica(String replica) {
    leases.deregisterReplica(replica);
  }

  @Override
  public Optional<String> swapIncarnation(
      String model, String pod, String incarnation, Duration ttl) {
    return leases.swapIncarnation(model, pod, incarnation, ttl);
  }

  @Override
  public boolean heartbeat(String model, String pod, Duration ttl) {
    Check.name(model, "model");
    Check.name(pod, "pod");
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    int g = keys.groupOf(model, pod);
    byte[] podField = KeySchema.podField(model, pod);
    RedisOutcome<Long> outcome =
        Await.of(
            writes
                .<Long>run(
                    Scripts.HEARTBEAT,
                    ScriptOutputType.INTEGER,
                    new byte[][] {keys.pods(g), keys.blocks(g)},
                    podField,
                    ascii(ttlMs),
                    KeySchema.holderField(podField))
                .toCompletableFuture());
    return outcome.isDone();
  }

  @Override
  public CompletableFuture<ResyncStatus> requestResyncAsync(
      String model, String pod, String note, Duration interval) {
    return resyncs.request(model, pod, note, interval);
  }

  @Override
  public Optional<String> takeResync(StreamId stream) {
    return resyncs.take(stream);
  }

  @Override
  public OptionalLong watermark(StreamId stream) {
    Check.notNull(stream, "stream");
    byte[] rec =
        Await.of(
                writes
                    .<byte[]>run(
                        Scripts.READ,
                        ScriptOutputType.VALUE,
                        new byte[][] {keys.streams(group(stream))},
                        KeySchema.streamField(stream))
                    .toCompletableFuture())
            .orElseThrow();
    if (rec == null) {
      return OptionalLong.empty();
    }
    String[] parts = text(rec).split("\\|", -1); // slot|watermark[|seq:chunks done]
    return parts[1].isEmpty() ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(parts[1]));
  }

  @Override
  public GcResult collectGarbage(int group, int budget) {
    return maintenance.collectGarbage(group, budget);
  }

  @Override
  public void collectAllGarbage() {
    maintenance.collectAllGarbage();
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
