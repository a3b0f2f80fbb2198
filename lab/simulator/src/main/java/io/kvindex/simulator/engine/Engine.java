package io.kvindex.simulator.engine;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.HybridHit;
import io.kvindex.simulator.CachedPrefix;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.FaultKnobs;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.ModelKind;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.PodUnavailableException;
import io.kvindex.simulator.wire.EventPublisher;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
   * step, so a step's batch holds every scheduled request's events. In each step the block pool
   * first allocates the slots the step needs (evicting cached blocks from the free-queue head: one BlockRemoved per hash), then
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
   * Hybrid models (ModelKind): group 1 shares the pool with full attention (group 0); HybridGroups
   * holds its rules. Sequence holds a request's state, StepEvents builds a step's events.
   */
  static final String CPU = StepEvents.CPU;

  private final String pod;
  private final int rank;
  private final PodConfig config;
  private final Supplier<ChainHasher> hashers;
  private final EventPublisher publisher;
  private final FaultKnobs faults;
  private final ModelKind kind;
  private final HybridHit rule;
  private final List<BatchListener> listeners = new CopyOnWriteArrayList<>();
  private final StepEvents events;

  private GpuBlockPool pool;
  private CpuTier cpu;
  private TieredHits tieredHits;
  private HybridGroups hybrid;
  private ChainHasher hasher;
  private long nextSeq;
  private Integer sleepLevel;
  private Instant startTime;
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
    this.events = new StepEvents(kind);
    startFresh();
  }

  private void startFresh() {
    pool = new GpuBlockPool(config.capacityBlocks());
    cpu = config.cpuCapacityBlocks() > 0 ? new CpuTier(config.cpuCapacityBlocks()) : null;
    tieredHits = new TieredHits(pool, cpu);
    hybrid =
        rule == null
            ? null
            : new HybridGroups(kind, rule, config.blockSize(), pool, events, this::evicted);
    hasher = hashers.get();
    nextSeq = 0;
    sleepLevel = null;
    events.clear();
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
    if (hybrid != null) {
      return hybrid.prefix(request, hasher);
    }
    return tieredHits.prefix(request, hasher);
  }

  /** Resets the prefix cache (both tiers) and queues AllBlocksCleared for the next step. */
  public synchronized boolean resetPrefixCache() {
    pool.clearHashes();
    if (cpu != null) {
      cpu.clear();
    }
    events.queue(AllBlocksCleared.INSTANCE);
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
    if (hybrid != null) {
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

  /** A sequence for {@code request}, not yet admitted; checks that it can fit at all. */
  synchronized Sequence sequence(InferenceRequest request) {
    if (sleepLevel != null) {
      throw new PodUnavailableException(
          "pod " + pod + " rank " + rank + " is asleep (level " + sleepLevel + "); wake it up");
    }
    return newSequence(request);
  }

  private Sequence newSequence(InferenceRequest request) {
    return new Sequence(request, config.blockSize(), kind, hasher, pool.capacity(), pod);
  }

  /**
   * Admits a waiting (or preempted) sequence: finds its prefix-cache hits (GPU, then CPU; capped so
   * at least one token is computed; of a hybrid model, the coordinator's hit over both groups),
   * then allocates the blocks for them and for up to {@code budget} tokens to compute. Returns the
   * tokens scheduled, or -1 (and changes nothing) when the free blocks do not suffice.
   */
  synchronized int admit(Sequence s, int budget) {
    int chunk = hybrid != null ? hybrid.admit(s, budget) : tieredHits.admit(s, budget);
    if (chunk < 0) {
      return -1;
    }
    if (s.hitTokens < 0) {
      s.hitTokens = s.kv;
    }
    allocateAndCache(s, chunk);
    return chunk;
  }

  /**
   * The most of {@code chunk} a running sequence's next step may compute: a Mamba hybrid's step
   * ends exactly at a kept state's position, so that the state there exists.
   */
  synchronized int chunk(Sequence s, int chunk) {
    return hybrid == null ? chunk : hybrid.chunk(s, chunk);
  }

  /**
   * Schedules {@code chunk} more tokens of a running sequence: allocates the blocks they need and
   * caches the blocks they fill. Returns false (and changes nothing) when the free blocks do not
   * suffice: the scheduler then preempts.
   */
  synchronized boolean extend(Sequence s, int chunk) {
    int fresh = ceilDiv(s.kv + chunk, s.blockSize) - s.slots.size();
    if (hybrid != null) {
      fresh += hybrid.prepareStep(s, chunk);
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
    if (hybrid != null) {
      hybrid.allocate(s, chunk); // every group allocates before any caches, as vLLM's do
    }
    int full = Math.min((s.kv + chunk) / s.blockSize, s.hashes.length);
    cacheBlocks(s, s.cachedBlocks, full);
    s.cachedBlocks = Math.max(s.cachedBlocks, full);
    if (hybrid != null) {
      hybrid.cache(s, chunk);
    }
    s.scheduled = chunk;
  }

  /**
   * Frees a sequence's blocks (to the free-queue tail, last block first, so tails are evicted
   * before heads): at its end, or when it is preempted (it then starts over from its prefix hits).
   */
  synchronized void release(Sequence s) {
    for (int i = s.slots.size() - 1; i >= 0; i--) {
      pool.free(s.slots.get(i));
    }
    if (hybrid != null) {
      hybrid.release(s);
    }
    s.released();
  }

  /** Ends a scheduler step: publishes its events as one batch, if it has any. */
  synchronized void publishStep() {
    if (!events.isEmpty()) {
      publish(events.drain());
    }
  }

  /** Counts restarts, so a scheduler knows its sequences' blocks are gone. */
  synchronized long generation() {
    return generation;
  }

  /** Serves one request at once: a prefill step, then one decode step per generated token. */
  private int serve(InferenceRequest request) {
    Sequence s = newSequence(request);
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
      events.gpuRemoved(hash, group);
    }
    if (group == 0 && cpu != null && cpu.offer(hash, this::cpuEvicted)) {
      events.cpuStored(hash);
    }
  }

  private void cpuEvicted(long hash) {
    if (!faults.silentEviction()) {
      events.cpuRemoved(hash);
    }
  }

  /** Caches blocks [from, to) of the sequence, one BlockStored per contiguous newly cached run. */
  private void cacheBlocks(Sequence s, int from, int to) {
    int runStart = from;
    for (int b = from; b < to; b++) {
      if (!pool.cache(s.slots.get(b), s.hashes[b])) {
        events.stored(s, runStart, b);
        runStart = b + 1;
      }
    }
    events.stored(s, runStart, to);
  }

  private void publish(List<KvEvent> batchEvents) {
    Instant now = config.clock().instant();
    double ts = now.getEpochSecond() + now.getNano() / 1e9;
    KvEventBatch batch = KvEventBatch.of(ts, batchEvents, rank);
    byte[] payload = config.encoder().encode(batch);
    long seq = nextSeq++;
    publisher.publish(seq, payload);
    for (BatchListener listener : listeners) {
      listener.published(seq, batch, payload);
    }
  }

  static int ceilDiv(int a, int b) {
    return -Math.floorDiv(-a, b);
  }
}
