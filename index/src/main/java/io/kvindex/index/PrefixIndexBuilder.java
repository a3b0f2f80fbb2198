package io.kvindex.index;

import io.kvindex.common.Check;
import io.kvindex.index.redis.RedisPrefixIndex;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * Configures a {@link PrefixIndex}. Each setter checks its argument at once; defaults are listed on
 * each setter. Not thread-safe; the index it builds is.
 */
public final class PrefixIndexBuilder {
  /**
   * The default of {@link #tierWeight}: GPU 1.0, CPU 0.8, STORAGE 0.5, OTHER 0.5; a router that
   * scores from elsewhere (the simulator's oracle) weighs tiers with these too.
   */
  public static final Map<Tier, Double> DEFAULT_TIER_WEIGHTS =
      Map.of(Tier.GPU, 1.0, Tier.CPU, 0.8, Tier.STORAGE, 0.5, Tier.OTHER, 0.5);

  private String indexName = "default";
  private int groups = 1;
  private final Map<Tier, Double> tierWeights = new EnumMap<>(Tier.class);
  private Duration podTtl = Duration.ofSeconds(30);
  private Duration departedRetention = Duration.ofHours(1);

  /**
   * Hash fields one garbage-collection call examines by default. A call's time inside Redis grows
   * with the entries it strips, and about one segment field (16 blocks' entries) comes with every
   * 16 block fields; 16 keeps a call well under the 1 ms bound while a large cleanup still finishes
   * in seconds (BENCHMARKS.md has the measured calls and cleanup times).
   */
  public static final int DEFAULT_GC_BUDGET = 16;

  /**
   * The largest GC budget: a call rewrites up to about that many fields in one script run (a few
   * milliseconds at the cap, so only for draining a backlog quickly while nothing else waits).
   */
  public static final int MAX_GC_BUDGET = 3000;

  private int gcBudget = DEFAULT_GC_BUDGET;

  /**
   * Blocks one segment field may describe by default. A segment of a chain without branches holds
   * 16; branches below a shared head add theirs, and a segment past the limit is marked overflowed
   * for good (lookups then read its 16 blocks one field each). Shared system prompts branch a lot,
   * so a low limit leaves many lookups reading block fields, while every write to a segment
   * rewrites its value and GC strips it whole, so the limit also bounds that work; BENCHMARKS.md
   * has the shares measured in the demo at several limits.
   */
  public static final int DEFAULT_SEGMENT_SLOTS = 256;

  private int segmentSlots = DEFAULT_SEGMENT_SLOTS;

  /**
   * Blocks one apply call writes at most by default. A call's time inside Redis grows with the
   * blocks it writes (and every other client waits meanwhile); a larger batch, such as one
   * BlockStored of a long prompt's prefill, is applied in chunks of this many blocks, one call each
   * (BENCHMARKS.md has the longest call measured at this size).
   */
  public static final int DEFAULT_APPLY_CHUNK_BLOCKS = 128;

  private int applyChunkBlocks = DEFAULT_APPLY_CHUNK_BLOCKS;
  private RetryPolicy writePolicy = RetryPolicy.defaults();
  private RetryPolicy lookupPolicy = RetryPolicy.router();
  private RedisConnector connector;
  private boolean loadsScripts = true;
  private Supplier<? extends CompletionStage<?>> betweenChunks = NOTHING_TO_WAIT_FOR;

  private static final Supplier<CompletionStage<?>> NOTHING_TO_WAIT_FOR =
      () -> CompletableFuture.completedFuture(null);

  PrefixIndexBuilder() {
    tierWeights.putAll(DEFAULT_TIER_WEIGHTS);
  }

  /**
   * The index's name: several indexes can share one Redis. Any string; it is percent-encoded into
   * the key names. Default {@code default}.
   */
  public PrefixIndexBuilder indexName(String indexName) {
    this.indexName = Check.name(indexName, "indexName");
    return this;
  }

  /**
   * How many index groups pods are spread over (each group is one Redis hash slot, so more groups
   * spread a big fleet over cluster shards). Fixed for the life of an index: a mismatch with the
   * stored count fails {@link #build()}. Default 1.
   */
  public PrefixIndexBuilder groups(int groups) {
    this.groups = Check.between(groups, 1, 65536, "groups");
    return this;
  }

  /**
   * A tier's weight in {@link PodMatch#score()}, in [0, 1000]. Defaults {@link
   * #DEFAULT_TIER_WEIGHTS}: GPU 1.0, CPU 0.8, STORAGE 0.5, OTHER 0.5.
   */
  public PrefixIndexBuilder tierWeight(Tier tier, double weight) {
    tierWeights.put(Check.notNull(tier, "tier"), Check.between(weight, 0, 1000, "weight"));
    return this;
  }

  /**
   * How long a pod stays live after its last applied batch (heartbeats set their own TTL). Default
   * 30 s.
   */
  public PrefixIndexBuilder podTtl(Duration podTtl) {
    this.podTtl = Check.atLeastOneMilli(podTtl, "podTtl");
    return this;
  }

  /**
   * How long after its liveness deadline a pod's records are kept: its streams' watermarks and
   * holder slots, and its pod record. {@link PrefixIndex#sweepDeparted} forgets pods older than
   * that; one that comes back starts afresh, with no watermark. Default 1 h.
   */
  public PrefixIndexBuilder departedRetention(Duration retention) {
    this.departedRetention = Check.atLeastOneMilli(retention, "departedRetention");
    return this;
  }

  /**
   * Block fields one garbage-collection call examines (HSCAN COUNT), 1 to {@value #MAX_GC_BUDGET}.
   * Default {@link #DEFAULT_GC_BUDGET}.
   */
  public PrefixIndexBuilder gcBudget(int fields) {
    this.gcBudget = Check.between(fields, 1, MAX_GC_BUDGET, "gcBudget");
    return this;
  }

  /**
   * Blocks of one cache group one segment field may describe before it is marked overflowed (see
   * {@link #DEFAULT_SEGMENT_SLOTS}; a full-attention segment that also keeps a hybrid model's
   * sliding-window or Mamba blocks counts each group's apart); a span (256 blocks of a chain from
   * position 256 on) overflows once its value would pass 64 bytes per slot of this. Writers'
   * setting; routers read whatever the index holds. Default {@value #DEFAULT_SEGMENT_SLOTS}.
   */
  public PrefixIndexBuilder segmentSlots(int slots) {
    this.segmentSlots = Check.between(slots, 16, 4096, "segmentSlots");
    return this;
  }

  /**
   * Blocks one apply call writes at most, 16 to 8192 (see {@link #DEFAULT_APPLY_CHUNK_BLOCKS}); a
   * larger batch is applied in chunks, each a call that changes nothing when retried. Default
   * {@value #DEFAULT_APPLY_CHUNK_BLOCKS}.
   */
  public PrefixIndexBuilder applyChunkBlocks(int blocks) {
    this.applyChunkBlocks = Check.between(blocks, 16, 8192, "applyChunkBlocks");
    return this;
  }

  /**
   * What a batch applied in several calls (more blocks than {@link #applyChunkBlocks}) waits for
   * between two of its calls: asked once between each two, the next call is sent once the stage
   * completes. Default: nothing. A writer's pause switch (tests, fault drills) holds its writes
   * there, as a process stopped between two calls would be held.
   */
  public PrefixIndexBuilder betweenChunks(Supplier<? extends CompletionStage<?>> wait) {
    this.betweenChunks = Check.notNull(wait, "wait");
    return this;
  }

  /** Retries of writes, leases and GC. Default {@link RetryPolicy#defaults()}. */
  public PrefixIndexBuilder writePolicy(RetryPolicy policy) {
    this.writePolicy = Check.notNull(policy, "policy");
    return this;
  }

  /** Retries of lookups. Default {@link RetryPolicy#router()} (5 ms budget). */
  public PrefixIndexBuilder lookupPolicy(RetryPolicy policy) {
    this.lookupPolicy = Check.notNull(policy, "policy");
    return this;
  }

  /**
   * The Redis server or cluster (its metrics and error classification come with it). The caller
   * owns and closes it, after the index. Required by {@link #build()}.
   */
  public PrefixIndexBuilder redis(RedisConnector connector) {
    this.connector = Check.notNull(connector, "connector");
    return this;
  }

  /**
   * Whether this process loads the index's scripts into Redis: SCRIPT LOAD of every script when it
   * opens the index, and EVAL plus SCRIPT LOAD of every script again when a node answers NOSCRIPT
   * (a restart, a failover, SCRIPT FLUSH). Writers (ingesters) do. A router does not (its Redis
   * user needs no EVAL or SCRIPT LOAD): it runs EVALSHA and EVALSHA_RO of the scripts writers
   * loaded, a missing one is a temporary error (its lookups answer "index unavailable" until a
   * writer loads it), and it cannot create an index that does not exist. Default true.
   */
  public PrefixIndexBuilder loadsScripts(boolean loads) {
    this.loadsScripts = loads;
    return this;
  }

  /**
   * A Redis-backed index. Checks the group count and the index format stored in Redis (records them
   * on first use).
   *
   * @throws IndexMismatchException if the index exists with another group count or index format
   * @throws IndexNotFoundException if the index does not exist and this process does not {@link
   *     #loadsScripts load scripts}, so may not create it
   */
  public PrefixIndex build() {
    if (connector == null) {
      throw new IllegalStateException("redis(connector) is required to build a Redis index");
    }
    return RedisPrefixIndex.open(
        config(), connector, writePolicy, lookupPolicy, loadsScripts, betweenChunks);
  }

  /** The settings as built so far (the in-memory model of the tests' fixtures reads them). */
  IndexConfig config() {
    return new IndexConfig(
        indexName,
        groups,
        tierWeights,
        podTtl,
        gcBudget,
        segmentSlots,
        departedRetention,
        applyChunkBlocks);
  }
}
