package io.kvindex.index;

import io.kvindex.event.KvEventBatch;
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/*
 * Implementation notes.
 *
 * Key layout. Every key is kvindex:v1:{<index>/<group>}:<name>, <index> percent-encoded, so the
 * hash tag is the index and group and every script touches exactly one slot (all keys in KEYS);
 * the scripts run unchanged on Redis Cluster. A pod (model, pod) belongs to group
 * SHA-256(podField)[0..4) mod groups; all its ranks' streams live in that group. Per group:
 *   meta     HASH  groups (fixed at creation), next (last slot handed out), pass (GC passes
 *                  started), cursor (HSCAN cursor of the pass in progress), fence (lease tokens)
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
 *                  "kvindex/speculation" -> the latest deadline (ms, decimal) of any
 *                  speculative route of the group (the speculation gate);
 *                  "kvindex/slots-generation" -> a counter (HINCRBY) that every script changing
 *                  which slots a pod record lists moves in the same call;
 *                  "kvindex/unlocated" -> how many block fields have no locator
 *   free     LIST  slots ready for reuse
 *   dead     HASH  retired slot -> the GC pass number at its death
 *   lease:<d> STRING "token:owner" with PX, d = hex SHA-256(streamField)[0..16)
 *   tmap:<d>  HASH  cacheGroup(2) engineHash(8) -> tokenKey(8) (token key mode only)
 *   spec:<p>  HASH  block field -> deadline ms (decimal): routes a router recorded for a pod
 *                  (speculate.lua), p = hex SHA-256(podField)[0..16); the key carries a PEXPIRE
 *                  as long as its longest-lived entry, so it vanishes with no process left
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
 * Writes. apply.lua checks the lease token (FENCED), then the watermark (DUPLICATE / GAP change
 * nothing), checks slot capacity before its first write (a failing script keeps its writes), then
 * applies the events in order and stores the watermark and the pod's liveness deadline (Redis
 * TIME) in the same atomic call. A stored block's locator follows from its parent's (a block with
 * no parent is block 0); a located block's entries, less dead slots', are copied into its
 * segment in the same call, and a block stored under a parent with no locator is counted as
 * unlocated until its field goes. Every script is idempotent for a retried duplicate: a batch that
 * ran but whose reply was lost comes back DUPLICATE.
 *
 * Reads (RedisLookups). A lookup of a group is one plain HMGET of the blocks hash: the gate, the
 * slots generation, the unlocated count, the holder records of the candidates the router has no
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
 * Measured (256 blocks, 64 candidates, 1M entries): the script moved 321 arguments and 256 values
 * through Lua, 463 us inside Redis per lookup; an HMGET of the 258 block fields took 168 us when
 * its fields were not in cache (the benchmark) and 42 us when they were; reading segments, a
 * lookup costs about 1.7 x PING instead of 2.6-2.9 x. Groups are looked up in parallel and merged.
 * Lookups use the router retry profile and report an incomplete result rather than fail. All
 * writers must move the generation: routers of this version must not share an index with
 * ingesters of an earlier one.
 */
final class RedisPrefixIndex implements PrefixIndex {
  private static final LuaScript APPLY = script("apply");
  private static final LuaScript PURGE = script("purge");
  private static final LuaScript GC = script("gc");
  private static final LuaScript LEASE = script("lease");
  private static final LuaScript HEARTBEAT = script("heartbeat");
  private static final LuaScript READ = script("read");
  private static final LuaScript SPECULATE = script("speculate");
  private static final LuaScript PODS = script("pods");
  private static final LuaScript SWEEP = script("sweep");

  /** Fields a pod's speculative hash may hold before it is dropped and started afresh. */
  static final int SPECULATIVE_FIELD_LIMIT = 100_000;

  private static final LuaScript INIT = script("init");
  private static final long MAX_SEQ = 1L << 53;

  private final IndexConfig config;
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final ScriptRunner reads;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final RedisLookups lookups;

  private RedisPrefixIndex(
      IndexConfig config,
      ScriptRunner writes,
      ScriptRunner reads,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      MeterRegistry registry) {
    this.config = config;
    this.keys = new KeySchema(config.indexName(), config.groups());
    this.writes = writes;
    this.reads = reads;
    this.commands = commands;
    this.lookups = new RedisLookups(config, keys, reads, commands, registry);
  }

  /**
   * @param commands the connection {@code reads} runs on, for the plain HMGETs of lookups
   * @param registry where the index's meters go
   */
  static RedisPrefixIndex open(
      IndexConfig config,
      ScriptRunner writes,
      ScriptRunner reads,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      MeterRegistry registry) {
    RedisPrefixIndex index = new RedisPrefixIndex(config, writes, reads, commands, registry);
    index.checkGroups();
    return index;
  }

  private void checkGroups() {
    byte[] count = ascii(config.groups());
    for (int g = 0; g < config.groups(); g++) {
      byte[] stored =
          Await.of(
                  writes
                      .<byte[]>run(INIT, ScriptOutputType.VALUE, new byte[][] {keys.meta(g)}, count)
                      .toCompletableFuture())
              .orElseThrow();
      int storedGroups = Integer.parseInt(new String(stored, StandardCharsets.US_ASCII));
      if (storedGroups != config.groups()) {
        throw new IllegalStateException(
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
    }
  }

  @Override
  public CompletableFuture<ApplyResult> applyAsync(
      StreamId stream, long seq, long fencingToken, KvEventBatch batch) {
    Names.notNull(stream, "stream");
    Names.notNull(batch, "batch");
    if (seq < 0 || seq > MAX_SEQ) {
      throw new IllegalArgumentException("seq must be in [0, 2^53], got " + seq);
    }
    KeyMode mode = config.keyMode(stream.model());
    EventPacker.Packed packed = EventPacker.pack(mode, stream.model(), batch.events());
    int g = group(stream);
    List<byte[]> args = new ArrayList<>(8 + packed.events().size());
    args.add(KeySchema.streamField(stream));
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    args.add(podField);
    args.add(KeySchema.rank(stream.dpRank()));
    args.add(ascii(seq));
    args.add(ascii(fencingToken));
    args.add(ascii(config.podTtl().toMillis()));
    args.add(KeySchema.scope(mode, stream.model()));
    args.add(KeySchema.holderField(podField));
    args.add(ascii(config.segmentSlots()));
    args.addAll(packed.events());
    byte[][] k = {
      keys.meta(g),
      keys.streams(g),
      keys.pods(g),
      keys.blocks(g),
      keys.free(g),
      keys.dead(g),
      keys.lease(stream),
      keys.tokenMap(stream)
    };
    return writes
        .<List<Object>>run(APPLY, ScriptOutputType.MULTI, k, args.toArray(byte[][]::new))
        .thenApply(outcome -> applyResult(outcome, packed.dropped()))
        .toCompletableFuture();
  }

  private static ApplyResult applyResult(RedisOutcome<List<Object>> outcome, int packDropped) {
    if (!outcome.isDone()) {
      return ApplyResult.of(ApplyStatus.SWALLOWED, -1);
    }
    List<Object> reply = outcome.orElseThrow();
    ApplyStatus status = ApplyStatus.valueOf(text(reply.get(0)));
    long wm = (Long) reply.get(1);
    if (status != ApplyStatus.APPLIED) {
      return ApplyResult.of(status, wm);
    }
    return new ApplyResult(
        status,
        wm,
        ((Long) reply.get(2)).intValue(),
        ((Long) reply.get(3)).intValue(),
        ((Long) reply.get(4)).intValue() + packDropped);
  }

  @Override
  public CompletableFuture<PurgeStatus> purgeAsync(
      StreamId stream, long fencingToken, PurgeMode mode) {
    Names.notNull(stream, "stream");
    Names.notNull(mode, "mode");
    int g = group(stream);
    byte[][] k = {
      keys.meta(g),
      keys.streams(g),
      keys.pods(g),
      keys.dead(g),
      keys.lease(stream),
      keys.tokenMap(stream),
      keys.blocks(g)
    };
    byte[] podField = KeySchema.podField(stream.model(), stream.pod());
    return writes
        .<byte[]>run(
            PURGE,
            ScriptOutputType.VALUE,
            k,
            KeySchema.streamField(stream),
            podField,
            KeySchema.rank(stream.dpRank()),
            ascii(fencingToken),
            ascii(mode == PurgeMode.RESET_WATERMARK ? 1 : 0),
            KeySchema.holderField(podField))
        .thenApply(
            outcome ->
                outcome.isDone()
                    ? PurgeStatus.valueOf(text(outcome.orElseThrow()))
                    : PurgeStatus.SWALLOWED)
        .toCompletableFuture();
  }

  @Override
  public CompletableFuture<LookupResult> lookupAsync(LookupRequest request) {
    return lookups.lookup(Names.notNull(request, "request"));
  }

  @Override
  public CompletableFuture<Optional<List<String>>> livePods(String model) {
    Names.check(model, "model");
    byte[] prefix = KeySchema.modelPrefix(model);
    List<CompletableFuture<RedisOutcome<List<byte[]>>>> parts = new ArrayList<>();
    for (int g = 0; g < config.groups(); g++) {
      parts.add(
          reads
              .<List<byte[]>>run(PODS, ScriptOutputType.MULTI, new byte[][] {keys.pods(g)}, prefix)
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
      String model, KeyMode mode, String pod, List<Long> blockKeys, int cacheGroup, Duration ttl) {
    Names.check(model, "model");
    Names.check(pod, "pod");
    Names.notNull(mode, "mode");
    Names.notNull(blockKeys, "blockKeys");
    if (ttl == null || ttl.toMillis() < 1) {
      throw new IllegalArgumentException("ttl must be at least 1 ms, got " + ttl);
    }
    if (blockKeys.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    byte[] prefix = KeySchema.fieldPrefix(KeySchema.scope(mode, model), cacheGroup);
    byte[][] args = new byte[3 + blockKeys.size()][];
    args[0] = ascii(ttl.toMillis());
    args[1] = ascii(SPECULATIVE_FIELD_LIMIT);
    args[2] = KeySchema.SPECULATION_FIELD;
    for (int i = 0; i < blockKeys.size(); i++) {
      args[3 + i] = KeySchema.blockField(prefix, blockKeys.get(i));
    }
    return writes
        .<Long>run(
            SPECULATE,
            ScriptOutputType.INTEGER,
            new byte[][] {keys.speculative(model, pod), keys.blocks(keys.groupOf(model, pod))},
            args)
        .thenApply(RedisOutcome::isDone)
        .toCompletableFuture();
  }

  @Override
  public OptionalLong acquireLease(StreamId stream, String owner, Duration ttl) {
    byte[] token = this.<byte[]>lease(stream, "acquire", owner, ttl, 0).orElse(null);
    return token == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(text(token)));
  }

  @Override
  public boolean renewLease(StreamId stream, String owner, long token, Duration ttl) {
    return Long.valueOf(1).equals(this.<Long>lease(stream, "renew", owner, ttl, token).orElse(0L));
  }

  @Override
  public boolean releaseLease(StreamId stream, String owner, long token) {
    return Long.valueOf(1)
        .equals(this.<Long>lease(stream, "release", owner, Duration.ofMillis(1), token).orElse(0L));
  }

  private <T> RedisOutcome<T> lease(
      StreamId stream, String op, String owner, Duration ttl, long token) {
    Names.notNull(stream, "stream");
    Names.check(owner, "owner");
    long ttlMs = ttl(ttl);
    ScriptOutputType type =
        op.equals("acquire") ? ScriptOutputType.VALUE : ScriptOutputType.INTEGER;
    byte[][] k = {keys.meta(group(stream)), keys.lease(stream)};
    return Await.of(
        writes
            .<T>run(LEASE, type, k, utf8(op), utf8(owner), ascii(ttlMs), ascii(token))
            .toCompletableFuture());
  }

  @Override
  public boolean heartbeat(String model, String pod, Duration ttl) {
    Names.check(model, "model");
    Names.check(pod, "pod");
    int g = keys.groupOf(model, pod);
    byte[][] k = {keys.pods(g), keys.blocks(g)};
    byte[] podField = KeySchema.podField(model, pod);
    RedisOutcome<Long> outcome =
        Await.of(
            writes
                .<Long>run(
                    HEARTBEAT,
                    ScriptOutputType.INTEGER,
                    k,
                    podField,
                    ascii(ttl(ttl)),
                    KeySchema.holderField(podField))
                .toCompletableFuture());
    return outcome.isDone();
  }

  @Override
  public OptionalLong watermark(StreamId stream) {
    Names.notNull(stream, "stream");
    byte[] rec =
        Await.of(
                writes
                    .<byte[]>run(
                        READ,
                        ScriptOutputType.VALUE,
                        new byte[][] {keys.streams(group(stream))},
                        KeySchema.streamField(stream))
                    .toCompletableFuture())
            .orElseThrow();
    if (rec == null) {
      return OptionalLong.empty();
    }
    String value = text(rec);
    String wm = value.substring(value.indexOf('|') + 1);
    return wm.isEmpty() ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(wm));
  }

  @Override
  public GcResult collectGarbage(int group, int budget) {
    RedisOutcome<List<Object>> outcome = Await.of(gcStep(group, budget));
    if (!outcome.isDone()) {
      return new GcResult(false, 0, 0, 0);
    }
    List<Object> r = outcome.orElseThrow();
    return new GcResult(
        (Long) r.get(0) == 1,
        ((Long) r.get(1)).intValue(),
        ((Long) r.get(2)).intValue(),
        ((Long) r.get(3)).intValue());
  }

  private CompletableFuture<RedisOutcome<List<Object>>> gcStep(int group, int budget) {
    checkGroup(group);
    Names.atLeast(budget, 1, "budget");
    byte[][] k = {keys.meta(group), keys.blocks(group), keys.dead(group), keys.free(group)};
    return writes
        .<List<Object>>run(GC, ScriptOutputType.MULTI, k, ascii(budget))
        .toCompletableFuture();
  }

  @Override
  public void collectAllGarbage() {
    for (int g = 0; g < config.groups(); g++) {
      while (true) {
        List<Object> r = Await.of(gcStep(g, config.gcBudget())).orElseThrow();
        if ((Long) r.get(0) == 1) {
          break;
        }
      }
    }
  }

  @Override
  public SweepResult sweepDeparted(int group, int budget) {
    checkGroup(group);
    Names.atLeast(budget, 1, "budget");
    byte[][] k = {
      keys.meta(group), keys.streams(group), keys.pods(group), keys.blocks(group), keys.dead(group)
    };
    RedisOutcome<List<Object>> outcome =
        Await.of(
            writes
                .<List<Object>>run(
                    SWEEP,
                    ScriptOutputType.MULTI,
                    k,
                    ascii(budget),
                    ascii(config.departedRetention().toMillis()),
                    KeySchema.HOLDER_PREFIX)
                .toCompletableFuture());
    if (!outcome.isDone()) {
      return new SweepResult(false, 0, 0, 0);
    }
    List<Object> r = outcome.orElseThrow();
    List<byte[]> tokenMaps = new ArrayList<>();
    for (int i = 3; i < r.size(); i++) {
      tokenMaps.add(keys.tokenMap(group, (byte[]) r.get(i)));
    }
    if (!tokenMaps.isEmpty()) {
      // Outside the script (the keys are only known from its reply): a map left behind by a
      // swallowed UNLINK is never read again, since its stream starts afresh.
      Await.of(
          writes
              .calls()
              .call("sweep", () -> commands.unlink(tokenMaps.toArray(byte[][]::new)))
              .toCompletableFuture());
    }
    return new SweepResult(
        (Long) r.get(0) == 1,
        ((Long) r.get(1)).intValue(),
        tokenMaps.size(),
        ((Long) r.get(2)).intValue());
  }

  @Override
  public int groupOf(String model, String pod) {
    return keys.groupOf(Names.check(model, "model"), Names.check(pod, "pod"));
  }

  @Override
  public int groups() {
    return config.groups();
  }

  @Override
  public void close() {
    // Nothing of its own: the connector belongs to the caller.
  }

  private void checkGroup(int group) {
    if (group < 0 || group >= config.groups()) {
      throw new IllegalArgumentException(
          "group must be in [0, " + config.groups() + "), got " + group);
    }
  }

  private int group(StreamId stream) {
    return keys.groupOf(stream.model(), stream.pod());
  }

  private static long ttl(Duration ttl) {
    Names.notNull(ttl, "ttl");
    if (ttl.toMillis() < 1) {
      throw new IllegalArgumentException("ttl must be at least 1 ms, got " + ttl);
    }
    return ttl.toMillis();
  }

  private static LuaScript script(String name) {
    return LuaScript.fromResource(name, RedisPrefixIndex.class, name + ".lua");
  }

  static byte[] ascii(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] ascii(String value) {
    return value.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] utf8(String value) {
    return value.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(Object bytes) {
    return new String((byte[]) bytes, StandardCharsets.UTF_8);
  }
}
