package io.kvindex.simulator.engine;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.HybridHit;
import io.kvindex.index.Tier;
import io.kvindex.simulator.CachedPrefix;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.FaultKnobs;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.PodUnavailableException;
import io.kvindex.simulator.RequestTooLargeException;
import io.kvindex.simulator.wire.EventPublisher;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * One vLLM engine core (one data-parallel rank): the block pool, the optional CPU tier, the
 * scheduler's per-step event batching and the publisher. Thread-safe: every operation holds the
 * engine's lock, so requests on one engine are served one after the other.
 */
public final class Engine {
  /*
   * Implementation notes.
   *
   * submit() serves a request at once, step by step as vLLM's scheduler would: a prefill step,
   * then one decode step per generated token. A StepScheduler instead drives many Sequences in
   * (simulated) time through the same admit / extend / publishStep / release calls, several per
   * step, so a step's batch holds every scheduled request's events. In each step the block pool first allocates the slots the
   * step needs (evicting cached blocks from the free-queue head: one BlockRemoved per hash), then
   * caches the blocks that are full after the step (one BlockStored per contiguous run). The CPU
   * connector's events (stores of GPU-evicted blocks, removes of CPU-evicted ones) follow the
   * pool's, as the scheduler appends connector events after draining the pool. A step publishes
   * one batch if it has any event, prefixed by events queued while idle (AllBlocksCleared from a
   * reset or sleep). When the request ends its slots return to the free-queue tail last block
   * first, so tails are evicted before heads.
   *
   * Hits: the longest run of cached prompt blocks (GPU, then CPU), capped so that at least one
   * prompt token is computed, as vLLM caps at (prompt - 1) tokens. A block whose hash another slot
   * already caches is not cached again and sends no event, so each hash has one holder and the
   * events always describe the cache exactly.
   *
   * Faults: with silent eviction on (FaultKnobs), an evicted block leaves the cache without its
   * BlockRemoved, as some offload connectors do: the ring never holds that event either.
   *
   * Hybrid models (ModelKind): group 1 shares the pool with full attention (group 0). The hit is
   * vLLM's coordinator rule (the index's HybridHit over what each group caches), and a request keeps
   * group 1's blocks only where vLLM's default retention does: at its replay boundary and at its
   * junction (the full-attention hit its engine hit fell short of). A sliding-window request frees
   * the blocks behind its window at each step, hashed ones to the free queue's tail (still cached,
   * no BlockRemoved), unhashed ones to its head. A Mamba request holds one running state block; a
   * step ends exactly at each kept position (the align-mode chunk split), where the state block is
   * hashed with the fine hash there and stored, then freed a step later.
   */
  static final String CPU = "CPU";
  private static final String FULL_ATTENTION = "full_attention";

  private final String pod;
  private final int rank;
  private final PodConfig config;
  private final Supplier<ChainHasher> hashers;
  private final EventPublisher publisher;
  private final FaultKnobs faults;
  private final ModelKind kind;
  private final HybridHit rule;
  private final int groupBlock;
  private final int windowBlocks;
  private final List<BatchListener> listeners = new CopyOnWriteArrayList<>();
  private final List<KvEvent> pending = new ArrayList<>();
  // The current step's events: the pool's, then the CPU connector's.
  private final List<KvEvent> poolEvents = new ArrayList<>();
  private final List<KvEvent> connectorEvents = new ArrayList<>();

  private GpuBlockPool pool;
  private CpuTier cpu;
  private ChainHasher hasher;
  private long nextSeq;
  private Integer sleepLevel;
  private Instant startTime;
  private long promptTokens;
  private long cachedTokens;
  private long generation;

  /** Sees every published batch, in order, on the engine's thread. */
  public interface BatchListener {
    void published(long seq, KvEventBatch batch, byte[] payload);
  }

  public Engine(
      String pod,
      int rank,
      PodConfig config,
      Supplier<ChainHasher> hashers,
      EventPublisher publisher,
      FaultKnobs faults) {
    this.pod = pod;
    this.rank = rank;
    this.config = config;
    this.hashers = hashers;
    this.publisher = publisher;
    this.faults = faults;
    this.kind = config.modelKind();
    this.rule =
        kind.hybrid() ? new HybridHit(kind.layout(config.blockSize()), config.blockSize()) : null;
    this.groupBlock = kind.groupBlockSize(config.blockSize());
    this.windowBlocks = kind.window() == null ? 0 : ceilDiv(kind.window() - 1, config.blockSize());
    startFresh();
  }

  private void startFresh() {
    pool = new GpuBlockPool(config.capacityBlocks());
    cpu = config.cpuCapacityBlocks() > 0 ? new CpuTier(config.cpuCapacityBlocks()) : null;
    hasher = hashers.get();
    nextSeq = 0;
    sleepLevel = null;
    pending.clear();
    poolEvents.clear();
    connectorEvents.clear();
    startTime = config.clock().instant();
  }

  public int rank() {
    return rank;
  }

  public EventPublisher publisher() {
    return publisher;
  }

  public void addListener(BatchListener listener) {
    listeners.add(listener);
  }

  public synchronized Completion submit(InferenceRequest request) {
    if (sleepLevel != null) {
      throw new PodUnavailableException(
          "pod " + pod + " rank " + rank + " is asleep (level " + sleepLevel + "); wake it up");
    }
    int cached = serve(request);
    return new Completion(pod, rank, request.promptLength(), cached);
  }

  /**
   * What the engine holds of the request's prompt now: its full blocks' tiers from block 0 up to
   * the first one it does not hold, hashed with the engine's own hasher no further than that.
   */
  public synchronized CachedPrefix cachedPrefix(InferenceRequest request) {
    if (rule != null) {
      return hybridPrefix(request);
    }
    int[] prompt = request.promptTokens();
    long[] hashes =
        hasher.hashesWhile(
            prompt, request.loraName(), request.cacheSalt(), h -> tiersHolding(h) != 0);
    int held = hashes.length;
    if (held > 0 && tiersHolding(hashes[held - 1]) == 0) {
      held--;
    }
    int[] tiers = new int[held];
    for (int i = 0; i < held; i++) {
      tiers[i] = tiersHolding(hashes[i]);
    }
    return new CachedPrefix(hashes.length == 0 ? 0 : hashes[0], tiers);
  }

  /**
   * A hybrid engine's hit for the prompt, as its coordinator would find it now (capped at the
   * prompt's length minus one), as that many GPU blocks.
   */
  private CachedPrefix hybridPrefix(InferenceRequest request) {
    int[] prompt = request.promptTokens();
    long[] hashes =
        hasher.hashesWhile(
            prompt, request.loraName(), request.cacheSalt(), h -> pool.contains(h, 0));
    int hit = hit(hashes, prompt.length).tokens();
    int[] tiers = new int[hit / config.blockSize()];
    Arrays.fill(tiers, Tier.GPU.bit());
    return new CachedPrefix(hashes.length == 0 ? 0 : hashes[0], tiers);
  }

  /**
   * vLLM's hybrid hit for a request of {@code tokens} tokens whose block hashes are {@code hashes}.
   */
  private HybridHit.Hit hit(long[] hashes, int tokens) {
    HybridHit.Holds full = i -> i < hashes.length && pool.contains(hashes[i], 0);
    HybridHit.Holds group = i -> i < hashes.length && pool.contains(hashes[i], 1);
    return rule.hit(tokens, new HybridHit.Holds[] {full, group});
  }

  private int tiersHolding(long hash) {
    int bits = pool.contains(hash) ? Tier.GPU.bit() : 0;
    return cpu != null && cpu.contains(hash) ? bits | Tier.CPU.bit() : bits;
  }

  /** Resets the prefix cache (both tiers) and queues AllBlocksCleared for the next step. */
  public synchronized boolean resetPrefixCache() {
    pool.clearHashes();
    if (cpu != null) {
      cpu.clear();
    }
    pending.add(AllBlocksCleared.INSTANCE);
    return true;
  }

  /** Level 0 pauses; levels 1 and 2 also clear the cache, as vLLM's sleep does. */
  public synchronized void sleep(int level) {
    if (level < 0 || level > 2) {
      throw new IllegalArgumentException("sleep level must be 0, 1 or 2, got " + level);
    }
    if (level >= 1) {
      resetPrefixCache();
    }
    sleepLevel = level;
  }

  public synchronized void wakeUp() {
    sleepLevel = null;
  }

  /** The sleep level, or {@code null} when awake. */
  public synchronized Integer sleepLevel() {
    return sleepLevel;
  }

  /** A new engine process: empty cache, sequence from 0, no AllBlocksCleared. */
  public synchronized void restart() {
    publisher.restart();
    startFresh();
    generation++;
  }

  public synchronized Instant startTime() {
    return startTime;
  }

  /**
   * Publishes a payload the engine did not produce as its next batch (live and in the replay ring),
   * for tests of hostile input: the engine's cache, and so the ground truth, is unchanged.
   *
   * @return the batch's sequence number
   */
  public synchronized long inject(byte[] payload) {
    long seq = nextSeq++;
    publisher.publish(seq, payload);
    return seq;
  }

  public synchronized long nextSeq() {
    return nextSeq;
  }

  /**
   * The GPU hashes each cache group caches: group 0 (full attention), and group 1 for a hybrid
   * model.
   */
  public synchronized Map<Integer, Set<Long>> cachedGroupBlocks() {
    Map<Integer, Set<Long>> groups = new TreeMap<>();
    groups.put(0, pool.hashes(0));
    if (rule != null) {
      groups.put(1, pool.hashes(1));
    }
    return groups;
  }

  /**
   * The cached hashes per tier ({@code GPU}, and {@code CPU} when that tier exists); of a hybrid
   * model, the full-attention group's.
   */
  public synchronized Map<String, Set<Long>> cachedBlocks() {
    Map<String, Set<Long>> tiers = new TreeMap<>();
    tiers.put(Tiers.GPU, pool.hashes());
    if (cpu != null) {
      tiers.put(CPU, cpu.hashes());
    }
    return tiers;
  }

  public synchronized long promptTokens() {
    return promptTokens;
  }

  public synchronized long cachedTokens() {
    return cachedTokens;
  }

  /**
   * One request's life on the engine, step by step: the blocks it holds (in block order), the
   * tokens in its KV cache and the tokens it has generated. The instant {@link #submit} and the
   * timed {@link StepScheduler} drive the same steps; the engine's lock guards every call.
   */
  final class Sequence {
    private final InferenceRequest request;
    private final int blockSize = config.blockSize();
    private final int[] tokens;
    private final long[] hashes;
    private final List<Integer> slots = new ArrayList<>();
    private int kv;
    private int cachedBlocks;
    private int generated;
    private int scheduled;
    private int hitTokens = -1;
    // A hybrid model's group 1: token positions whose window or state is kept (replay boundary,
    // junction); a sliding window's blocks held (by block index, null blocks absent), the blocks
    // its
    // table covers and those caching has passed; a Mamba state's running block, the state blocks to
    // free at the next step.
    private final TreeSet<Integer> keptEnds = new TreeSet<>();
    private final NavigableMap<Integer, Integer> windowSlots = new TreeMap<>();
    private int windowEnd;
    private int windowCached;
    private int stateSlot = -1;
    private final List<Integer> spentStates = new ArrayList<>();

    Sequence(InferenceRequest request) {
      this.request = request;
      this.tokens = request.allTokens();
      int computed = tokens.length - 1;
      int needed = ceilDiv(computed, blockSize);
      if (kind == ModelKind.SLIDING_WINDOW) {
        needed *= 2; // a prefill holds each block in both groups until the window moves on
      } else if (kind == ModelKind.MAMBA) {
        needed += 3; // the state hit, the running state and a kept state
      }
      if (needed > pool.capacity()) {
        throw new RequestTooLargeException(
            "request needs "
                + needed
                + " KV blocks of "
                + blockSize
                + " tokens but pod "
                + pod
                + " has "
                + pool.capacity());
      }
      int fullBlocks = computed / blockSize;
      this.hashes =
          hasher.hashes(
              Arrays.copyOf(tokens, fullBlocks * blockSize),
              request.loraName(),
              request.cacheSalt());
    }

    InferenceRequest request() {
      return request;
    }

    /** Tokens whose KV the sequence holds now (0 while waiting or after a preemption). */
    int kvTokens() {
      return kv;
    }

    /** Output tokens generated so far. */
    int generated() {
      return generated;
    }

    /** Output tokens it generates in all. */
    int outputs() {
      return tokens.length - request.promptLength();
    }

    /** The KV tokens it needs before its next token comes out: the prompt, then one per token. */
    int target() {
      return request.promptLength() + generated;
    }

    /** Tokens the current step computes for it (set by {@link #admit} and {@link #extend}). */
    int scheduled() {
      return scheduled;
    }

    /** Prompt tokens its first admission found cached (-1 before it). */
    int hitTokens() {
      return hitTokens;
    }

    boolean finished() {
      return generated >= outputs();
    }

    /** The step ran: its scheduled tokens are in the KV cache; returns true if a token came out. */
    boolean advance() {
      kv += scheduled;
      scheduled = 0;
      if (kv >= target()) {
        generated++;
        return true;
      }
      return false;
    }
  }

  /** A sequence for {@code request}, not yet admitted; checks that it can fit at all. */
  synchronized Sequence sequence(InferenceRequest request) {
    if (sleepLevel != null) {
      throw new PodUnavailableException(
          "pod " + pod + " rank " + rank + " is asleep (level " + sleepLevel + "); wake it up");
    }
    return new Sequence(request);
  }

  /** The GPU blocks a new allocation can take now (free, or cached and not in use). */
  synchronized int freeBlocks() {
    return pool.freeCount();
  }

  /**
   * Admits a waiting (or preempted) sequence: finds its prefix-cache hits (GPU, then CPU; capped so
   * at least one token is computed), then allocates the blocks for them and for up to {@code
   * budget} tokens to compute. Returns the tokens scheduled, or -1 (and changes nothing) when the
   * free blocks do not suffice.
   */
  synchronized int admit(Sequence s, int budget) {
    if (rule != null) {
      return admitHybrid(s, budget);
    }
    int maxHit = (s.target() - 1) / s.blockSize;
    int gpuHits = 0;
    int queuedHits = 0;
    while (gpuHits < maxHit && gpuHits < s.hashes.length) {
      int slot = pool.lookup(s.hashes[gpuHits]);
      if (slot < 0) {
        break;
      }
      queuedHits += pool.isFree(slot) ? 1 : 0;
      gpuHits++;
    }
    int hits = gpuHits;
    while (cpu != null && hits < maxHit && hits < s.hashes.length && cpu.contains(s.hashes[hits])) {
      hits++;
    }
    int kv = hits * s.blockSize;
    int chunk = Math.min(s.target() - kv, budget);
    int fresh = ceilDiv(kv + chunk, s.blockSize) - gpuHits;
    if (fresh + queuedHits > pool.freeCount()) {
      return -1;
    }
    for (int b = 0; b < gpuHits; b++) {
      int slot = pool.lookup(s.hashes[b]);
      pool.touch(slot);
      s.slots.add(slot);
    }
    for (int b = gpuHits; b < hits; b++) {
      cpu.touch(s.hashes[b]);
    }
    if (s.hitTokens < 0) {
      s.hitTokens = kv;
      promptTokens += s.request.promptLength();
      cachedTokens += kv;
    }
    s.kv = kv;
    s.cachedBlocks = gpuHits;
    allocateAndCache(s, chunk);
    return chunk;
  }

  /**
   * {@link #admit} for a hybrid model: the coordinator's hit over both groups; the full-attention
   * blocks it uses, and group 1's window ending at it (or its state there), are taken into use.
   */
  private int admitHybrid(Sequence s, int budget) {
    int bs = s.blockSize;
    HybridHit.Hit hit = hit(s.hashes, s.target());
    int kv = hit.tokens();
    int hitBlocks = kv / bs;
    List<Integer> groupHits = new ArrayList<>();
    if (kind == ModelKind.SLIDING_WINDOW) {
      for (int b = Math.max(0, hitBlocks - windowBlocks); b < hitBlocks; b++) {
        groupHits.add(b);
      }
    } else if (kv > 0) {
      groupHits.add(hitBlocks - 1);
    }
    int queued = 0;
    for (int b = 0; b < hitBlocks; b++) {
      queued += pool.isFree(pool.lookup(s.hashes[b], 0)) ? 1 : 0;
    }
    for (int b : groupHits) {
      queued += pool.isFree(pool.lookup(s.hashes[b], 1)) ? 1 : 0;
    }
    TreeSet<Integer> kept = new TreeSet<>();
    int boundary = (s.request.promptLength() - 1) / rule.alignment() * rule.alignment();
    if (boundary > kv) {
      kept.add(boundary);
    }
    int junction = hit.groupTokens()[0];
    if (junction > kv) {
      kept.add(junction);
    }
    int chunk = Math.min(s.target() - kv, budget);
    if (kind == ModelKind.MAMBA) {
      Integer stop = kept.higher(kv);
      chunk = stop == null ? chunk : Math.min(chunk, stop - kv);
    }
    int fresh = ceilDiv(kv + chunk, bs) - hitBlocks;
    int groupFresh =
        kind == ModelKind.SLIDING_WINDOW ? fresh : 1 + (kept.contains(kv + chunk) ? 1 : 0);
    if (fresh + groupFresh + queued > pool.freeCount()) {
      return -1;
    }
    for (int b = 0; b < hitBlocks; b++) {
      int slot = pool.lookup(s.hashes[b], 0);
      pool.touch(slot);
      s.slots.add(slot);
    }
    for (int b : groupHits) {
      int slot = pool.lookup(s.hashes[b], 1);
      pool.touch(slot);
      if (kind == ModelKind.SLIDING_WINDOW) {
        s.windowSlots.put(b, slot);
      } else {
        s.spentStates.add(slot); // its state is copied into the running block, then let go
      }
    }
    if (kind == ModelKind.MAMBA) {
      s.stateSlot = pool.allocateForGroups(this::evicted);
    }
    if (s.hitTokens < 0) {
      s.hitTokens = kv;
      promptTokens += s.request.promptLength();
      cachedTokens += kv;
    }
    s.kv = kv;
    s.cachedBlocks = hitBlocks;
    s.windowEnd = hitBlocks;
    s.windowCached = hitBlocks;
    s.keptEnds.clear();
    s.keptEnds.addAll(kept);
    allocateAndCache(s, chunk);
    return chunk;
  }

  /**
   * The most of {@code chunk} a running sequence's next step may compute: a Mamba hybrid's step
   * ends exactly at a kept state's position, so that the state there exists.
   */
  synchronized int chunk(Sequence s, int chunk) {
    if (kind != ModelKind.MAMBA) {
      return chunk;
    }
    Integer stop = s.keptEnds.higher(s.kv);
    return stop == null ? chunk : Math.min(chunk, stop - s.kv);
  }

  /**
   * Schedules {@code chunk} more tokens of a running sequence: allocates the blocks they need and
   * caches the blocks they fill. Returns false (and changes nothing) when the free blocks do not
   * suffice: the scheduler then preempts.
   */
  synchronized boolean extend(Sequence s, int chunk) {
    int fresh = ceilDiv(s.kv + chunk, s.blockSize) - s.slots.size();
    if (rule != null) {
      freeBehind(s);
      fresh +=
          kind == ModelKind.SLIDING_WINDOW
              ? ceilDiv(s.kv + chunk, s.blockSize) - s.windowEnd
              : s.keptEnds.contains(s.kv + chunk) ? 1 : 0;
    }
    if (fresh > pool.freeCount()) {
      return false;
    }
    allocateAndCache(s, chunk);
    return true;
  }

  private void allocateAndCache(Sequence s, int chunk) {
    int fresh = ceilDiv(s.kv + chunk, s.blockSize) - s.slots.size();
    for (int i = 0; i < fresh; i++) {
      s.slots.add(pool.allocateForGroups(this::evicted));
    }
    if (kind == ModelKind.SLIDING_WINDOW) {
      allocateWindow(s, chunk); // every group allocates before any caches, as vLLM's do
    }
    int full = Math.min((s.kv + chunk) / s.blockSize, s.hashes.length);
    cacheBlocks(s, s.cachedBlocks, full);
    s.cachedBlocks = Math.max(s.cachedBlocks, full);
    if (kind == ModelKind.SLIDING_WINDOW) {
      cacheWindow(s, chunk);
    } else if (kind == ModelKind.MAMBA) {
      cacheState(s, chunk);
    }
    s.scheduled = chunk;
  }

  /**
   * Before a step of a hybrid model: a sliding window frees the blocks wholly behind the window of
   * the tokens computed so far (vLLM's remove_skipped_blocks, last block first), a Mamba group the
   * state blocks it no longer reads.
   */
  private void freeBehind(Sequence s) {
    if (kind == ModelKind.SLIDING_WINDOW) {
      int skipped = Math.max(0, s.kv - kind.window() + 1) / s.blockSize;
      NavigableMap<Integer, Integer> behind = s.windowSlots.headMap(skipped, false);
      for (int slot : behind.descendingMap().values()) {
        pool.freeUnhashedFirst(slot);
      }
      behind.clear();
    } else {
      for (int slot : s.spentStates) {
        pool.free(slot);
      }
      s.spentStates.clear();
    }
  }

  /** A sliding window's blocks for the step's tokens. */
  private void allocateWindow(Sequence s, int chunk) {
    int end = ceilDiv(s.kv + chunk, s.blockSize);
    for (int b = s.windowEnd; b < end; b++) {
      s.windowSlots.put(b, pool.allocateForGroups(this::evicted));
    }
    s.windowEnd = Math.max(s.windowEnd, end);
  }

  /**
   * The full blocks a sliding window keeps cached (those of the window ending at a kept position):
   * one BlockStored whose token ids span every block caching passed and whose hashes are the kept
   * ones', as vLLM's pool sends it for a sparse group.
   */
  private void cacheWindow(Sequence s, int chunk) {
    int bs = s.blockSize;
    int full = Math.min((s.kv + chunk) / bs, s.hashes.length);
    int from = s.windowCached;
    if (full <= from) {
      return;
    }
    List<Long> stored = new ArrayList<>();
    List<List<ExtraKey>> extraKeys = new ArrayList<>();
    for (int b = from; b < full; b++) {
      Integer slot = s.windowSlots.get(b);
      if (slot != null && keptInWindow(s, b) && pool.cache(slot, s.hashes[b], 1)) {
        stored.add(s.hashes[b]);
        extraKeys.add(extraKeys(s.request, b));
      }
    }
    s.windowCached = full;
    if (!stored.isEmpty()) {
      poolEvents.add(
          groupStore(
              s,
              stored,
              from == 0 ? null : s.hashes[from - 1],
              from * bs,
              full * bs,
              bs,
              extraKeys));
    }
  }

  /** Whether block {@code b} is in the window ending at one of the sequence's kept positions. */
  private boolean keptInWindow(Sequence s, int b) {
    for (int end : s.keptEnds) {
      int last = end / s.blockSize;
      if (b < last && b >= last - windowBlocks) {
        return true;
      }
    }
    return false;
  }

  /**
   * A Mamba step ending at a kept position: the running state block is cached under the fine hash
   * there (a whole Mamba block's end-state, or a partial tail entry in blocks of the hash block)
   * and stored; the next step computes into a new block, this one freed a step later.
   */
  private void cacheState(Sequence s, int chunk) {
    int end = s.kv + chunk;
    int unit = end / s.blockSize - 1;
    if (!s.keptEnds.contains(end) || unit < 0 || unit >= s.hashes.length) {
      return;
    }
    if (!pool.cache(s.stateSlot, s.hashes[unit], 1)) {
      return; // another block holds that state already
    }
    int size = end % groupBlock == 0 ? groupBlock : s.blockSize;
    int start = end - size;
    poolEvents.add(
        groupStore(
            s,
            List.of(s.hashes[unit]),
            start == 0 ? null : s.hashes[start / s.blockSize - 1],
            start,
            end,
            size,
            List.of(extraKeys(s.request, start / s.blockSize))));
    s.spentStates.add(s.stateSlot);
    s.stateSlot = pool.allocateForGroups(this::evicted);
  }

  private BlockStored groupStore(
      Sequence s,
      List<Long> hashes,
      Long parent,
      int fromToken,
      int toToken,
      int blockSize,
      List<List<ExtraKey>> extraKeys) {
    List<Integer> tokens = new ArrayList<>(toToken - fromToken);
    for (int t = fromToken; t < toToken; t++) {
      tokens.add(s.tokens[t]);
    }
    return new BlockStored(
        hashes,
        parent,
        tokens,
        blockSize,
        loraId(s.request.loraName()),
        Tiers.GPU,
        s.request.loraName(),
        extraKeys,
        1,
        kind.specKind(),
        kind.window());
  }

  /**
   * Frees a sequence's blocks (to the free-queue tail, last block first, so tails are evicted
   * before heads): at its end, or when it is preempted (it then starts over from its prefix hits).
   */
  synchronized void release(Sequence s) {
    for (int i = s.slots.size() - 1; i >= 0; i--) {
      pool.free(s.slots.get(i));
    }
    s.slots.clear();
    if (rule != null) {
      for (int slot : s.windowSlots.descendingMap().values()) {
        pool.freeUnhashedFirst(slot);
      }
      s.windowSlots.clear();
      for (int slot : s.spentStates) {
        pool.free(slot);
      }
      s.spentStates.clear();
      if (s.stateSlot >= 0) {
        pool.freeUnhashedFirst(s.stateSlot);
        s.stateSlot = -1;
      }
      s.keptEnds.clear();
      s.windowEnd = 0;
      s.windowCached = 0;
    }
    s.kv = 0;
    s.cachedBlocks = 0;
    s.scheduled = 0;
  }

  /** Ends a scheduler step: publishes its events as one batch, if it has any. */
  synchronized void publishStep() {
    if (pending.isEmpty() && poolEvents.isEmpty() && connectorEvents.isEmpty()) {
      return;
    }
    List<KvEvent> events = new ArrayList<>(pending.size() + poolEvents.size());
    events.addAll(pending);
    events.addAll(poolEvents);
    events.addAll(connectorEvents);
    pending.clear();
    poolEvents.clear();
    connectorEvents.clear();
    publish(events);
  }

  /** Counts restarts, so a scheduler knows its sequences' blocks are gone. */
  synchronized long generation() {
    return generation;
  }

  /** Serves one request at once: a prefill step, then one decode step per generated token. */
  private int serve(InferenceRequest request) {
    Sequence s = new Sequence(request);
    admit(s, Integer.MAX_VALUE);
    publishStep();
    s.advance();
    while (!s.finished()) {
      extend(s, chunk(s, s.target() - s.kv));
      publishStep();
      s.advance();
    }
    release(s);
    return s.hitTokens;
  }

  private void evicted(long hash, int group) {
    if (!faults.silentEviction()) {
      poolEvents.add(new BlockRemoved(List.of(hash), Tiers.GPU, group));
    }
    if (group == 0 && cpu != null && cpu.offer(hash, this::cpuEvicted)) {
      addCpuStore(hash);
    }
  }

  private void cpuEvicted(long hash) {
    if (!faults.silentEviction()) {
      connectorEvents.add(new BlockRemoved(List.of(hash), CPU, 0));
    }
  }

  /** Consecutive CPU stores share one placeholder event, as the offloading connector's do. */
  private void addCpuStore(long hash) {
    int last = connectorEvents.size() - 1;
    if (last >= 0 && connectorEvents.get(last) instanceof BlockStored s && CPU.equals(s.medium())) {
      List<Long> merged = new ArrayList<>(s.blockHashes());
      merged.add(hash);
      connectorEvents.set(last, placeholder(merged));
    } else {
      connectorEvents.add(placeholder(List.of(hash)));
    }
  }

  private static BlockStored placeholder(List<Long> blockHashes) {
    return new BlockStored(
        blockHashes, null, List.of(), 0, null, CPU, null, null, 0, FULL_ATTENTION, null);
  }

  /** Caches blocks [from, to) of the sequence, one BlockStored per contiguous newly cached run. */
  private void cacheBlocks(Sequence s, int from, int to) {
    int runStart = from;
    for (int b = from; b < to; b++) {
      if (!pool.cache(s.slots.get(b), s.hashes[b])) {
        emitStored(s, runStart, b);
        runStart = b + 1;
      }
    }
    emitStored(s, runStart, to);
  }

  private void emitStored(Sequence s, int from, int to) {
    if (from >= to) {
      return;
    }
    int blockSize = s.blockSize;
    List<Long> run = new ArrayList<>(to - from);
    List<Integer> runTokens = new ArrayList<>((to - from) * blockSize);
    List<List<ExtraKey>> extraKeys = new ArrayList<>(to - from);
    for (int b = from; b < to; b++) {
      run.add(s.hashes[b]);
      extraKeys.add(extraKeys(s.request, b));
    }
    for (int t = from * blockSize; t < to * blockSize; t++) {
      runTokens.add(s.tokens[t]);
    }
    poolEvents.add(
        new BlockStored(
            run,
            from == 0 ? null : s.hashes[from - 1],
            runTokens,
            blockSize,
            loraId(s.request.loraName()),
            Tiers.GPU,
            s.request.loraName(),
            extraKeys,
            0,
            FULL_ATTENTION,
            null));
  }

  private static List<ExtraKey> extraKeys(InferenceRequest request, int block) {
    List<ExtraKey> keys = new ArrayList<>(2);
    if (request.loraName() != null) {
      keys.add(new ExtraKey.Text(request.loraName()));
    }
    if (block == 0 && request.cacheSalt() != null && !request.cacheSalt().isEmpty()) {
      keys.add(new ExtraKey.Text(request.cacheSalt()));
    }
    return keys;
  }

  private void publish(List<KvEvent> events) {
    Instant now = config.clock().instant();
    double ts = now.getEpochSecond() + now.getNano() / 1e9;
    KvEventBatch batch = KvEventBatch.of(ts, events, rank);
    byte[] payload = config.encoder().encode(batch);
    long seq = nextSeq++;
    publisher.publish(seq, payload);
    for (BatchListener listener : listeners) {
      listener.published(seq, batch, payload);
    }
  }

  /** A stable positive int id for a LoRA name, standing in for vLLM's adapter int id. */
  static Integer loraId(String loraName) {
    return loraName == null ? null : 1 + Math.floorMod(loraName.hashCode(), 1 << 20);
  }

  private static int ceilDiv(int a, int b) {
    return -Math.floorDiv(-a, b);
  }
}
