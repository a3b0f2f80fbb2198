package io.kvindex.index;

import io.kvindex.common.Check;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.redis.KeySchema;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The obviously-correct model of {@link PrefixIndex}: plain maps under one lock, the same semantics
 * as the Redis index (except that purged entries vanish at once, so there is no garbage). A test
 * fixture: the reference the Redis index is checked against, and a stand-in where a test needs an
 * index but not Redis. Thread-safe.
 */
public final class InMemoryPrefixIndex implements PrefixIndex {
  private record Block(KeyMode mode, int cacheGroup, long key) {}

  private record Pod(String model, String pod) {}

  /** A speculative route: the keys it records (its prompt's first) and until when it counts. */
  private record Route(KeyMode mode, int cacheGroup, long[] keys, long untilMillis) {}

  private record Held(Lease lease, long expiresAtMillis) {}

  private record Resync(String note, Set<Integer> takenByRank, long untilMillis) {}

  private record Inferred(int capacityBlocks, long untilMillis) {}

  private record Touched(long id, Touch touch) {}

  private record HandedOver(InferenceHandover handover, long untilMillis) {}

  private static final class Stream {
    Long watermark;
    boolean staged;
    final Map<Block, Integer> tiers = new HashMap<>();
    final Map<Block, Long> tokenMap = new HashMap<>();
  }

  private final IndexConfig config;
  private final KeySchema keys;
  private final InstantSource clock;
  private final Map<StreamId, Stream> streams = new HashMap<>();
  private final Map<Pod, Long> deadlines = new HashMap<>();
  private final Map<Pod, List<Route>> speculative = new HashMap<>();
  private final Map<StreamId, Held> leases = new HashMap<>();
  private final Map<String, Long> replicas = new HashMap<>();
  private final Map<StreamId, String> incarnations = new HashMap<>();
  private final Map<Pod, Resync> resyncs = new HashMap<>();
  private final Map<StreamId, Long> resyncsTaken = new HashMap<>();
  private final Map<StreamId, HandedOver> handovers = new HashMap<>();

  /** Per pod, per rank: {reported at ms, lag ms}; the pod's reports stand until lagUntil. */
  private final Map<Pod, Map<Integer, long[]>> lagReports = new HashMap<>();

  private final Map<Pod, Long> lagUntil = new HashMap<>();
  private final Map<String, String> readerKeys = new HashMap<>();
  private final Map<String, KeyCheckNote> keyChecks = new HashMap<>();
  private final Map<String, CacheLayout> layouts = new HashMap<>();
  private final Map<Pod, Inferred> inferred = new HashMap<>();
  private final Map<Pod, ArrayDeque<Touched>> touches = new HashMap<>();
  private long touchIds;
  private long fence;
  private long leaseReleases;

  /** The model with {@code builder}'s settings, on the system clock. */
  public static PrefixIndex of(PrefixIndexBuilder builder) {
    return of(builder, InstantSource.system());
  }

  /** The model with {@code builder}'s settings, on {@code clock} (Redis would use its own TIME). */
  public static PrefixIndex of(PrefixIndexBuilder builder, InstantSource clock) {
    return new InMemoryPrefixIndex(builder.config(), Check.notNull(clock, "clock"));
  }

  private InMemoryPrefixIndex(IndexConfig config, InstantSource clock) {
    this.config = config;
    this.keys = new KeySchema(config.indexName(), config.groups());
    this.clock = clock;
  }

  @Override
  public synchronized CompletableFuture<ApplyResult> applyAsync(
      StreamId stream,
      KeyMode mode,
      long firstSeq,
      long seq,
      Lease lease,
      KvEventBatch batch,
      boolean staged) {
    Check.notNull(stream, "stream");
    Check.notNull(mode, "mode");
    Check.notNull(lease, "lease");
    Check.notNull(batch, "batch");
    BatchCheck.check(ApplyPlan.of(mode, firstSeq, seq, batch), config.applyChunkBlocks());
    return CompletableFuture.completedFuture(
        applyNow(stream, mode, firstSeq, seq, lease, batch.events(), staged));
  }

  @Override
  public int applyChunkBlocks() {
    return config.applyChunkBlocks();
  }

  @Override
  public synchronized CompletableFuture<PurgeStatus> publishAsync(StreamId stream, Lease lease) {
    Check.notNull(stream, "stream");
    if (!holds(stream, Check.notNull(lease, "lease"))) {
      return CompletableFuture.completedFuture(PurgeStatus.FENCED);
    }
    Stream s = streams.get(stream);
    if (s != null) {
      s.staged = false;
    }
    return CompletableFuture.completedFuture(PurgeStatus.PURGED);
  }

  @Override
  public synchronized boolean staged(StreamId stream) {
    Stream s = streams.get(stream);
    return s != null && s.staged;
  }

  private ApplyResult applyNow(
      StreamId id,
      KeyMode mode,
      long firstSeq,
      long seq,
      Lease lease,
      List<KvEvent> events,
      boolean staged) {
    if (!holds(id, lease)) {
      return ApplyResult.of(ApplyStatus.FENCED, -1);
    }
    Stream s = streams.computeIfAbsent(id, x -> new Stream());
    if (s.watermark != null && firstSeq <= s.watermark) {
      return ApplyResult.of(ApplyStatus.DUPLICATE, s.watermark);
    }
    if (s.watermark != null && firstSeq > s.watermark + 1) {
      return ApplyResult.of(ApplyStatus.GAP, s.watermark);
    }
    int[] counts = new int[3];
    for (KvEvent event : events) {
      if (event instanceof AllBlocksCleared) {
        s.tiers.clear();
        s.tokenMap.clear();
      } else if (event instanceof BlockStored st) {
        store(s, mode, id.model(), st, counts);
      } else if (event instanceof BlockRemoved r) {
        remove(s, mode, r, counts);
      }
    }
    s.watermark = seq;
    s.staged = staged;
    deadlines.put(new Pod(id.model(), id.pod()), now() + config.podTtl().toMillis());
    return new ApplyResult(ApplyStatus.APPLIED, seq, counts[0], counts[1], counts[2]);
  }

  private static void store(Stream s, KeyMode mode, String model, BlockStored e, int[] counts) {
    int cg = e.cacheGroup();
    int bit = Tier.of(e.medium()).bit();
    int n = e.blockHashes().size();
    if (mode == KeyMode.ENGINE) {
      e.blockHashes().forEach(h -> s.tiers.merge(new Block(mode, cg, h), bit, (a, b) -> a | b));
      counts[0] += n;
      return;
    }
    if (n == 0) {
      return;
    }
    Long prev =
        e.parentBlockHash() == null
            ? Long.valueOf(TokenKeys.root(model, e.loraName()))
            : s.tokenMap.get(new Block(mode, cg, e.parentBlockHash()));
    if (!e.carriesEveryToken() || prev == null) {
      counts[2] += n;
      return;
    }
    int[] tokens = e.tokenIds().stream().mapToInt(Integer::intValue).toArray();
    long key = prev;
    for (int i = 0; i < n; i++) {
      key = TokenKeys.next(key, tokens, i * e.blockSize(), (i + 1) * e.blockSize());
      s.tokenMap.put(new Block(mode, cg, e.blockHashes().get(i)), key);
      s.tiers.merge(new Block(mode, cg, key), bit, (a, b) -> a | b);
    }
    counts[0] += n;
  }

  private static void remove(Stream s, KeyMode mode, BlockRemoved e, int[] counts) {
    int cg = e.cacheGroup();
    int bit = Tier.of(e.medium()).bit();
    for (long hash : e.blockHashes()) {
      Block engine = new Block(mode, cg, hash);
      Block block = engine;
      if (mode == KeyMode.TOKEN) {
        Long key = s.tokenMap.get(engine);
        if (key == null) {
          counts[2]++;
          continue;
        }
        block = new Block(mode, cg, key);
      }
      counts[1]++;
      int left = s.tiers.getOrDefault(block, 0) & ~bit;
      if (left == 0) {
        s.tiers.remove(block);
        s.tokenMap.remove(engine);
      } else {
        s.tiers.put(block, left);
      }
    }
  }

  @Override
  public synchronized CompletableFuture<PurgeStatus> purgeAsync(
      StreamId stream, Lease lease, PurgeMode mode) {
    Check.notNull(stream, "stream");
    Check.notNull(mode, "mode");
    if (!holds(stream, Check.notNull(lease, "lease"))) {
      return CompletableFuture.completedFuture(PurgeStatus.FENCED);
    }
    Stream s = streams.get(stream);
    if (s != null) {
      s.tiers.clear();
      s.tokenMap.clear();
      if (mode == PurgeMode.RESET_WATERMARK) {
        s.watermark = null;
      }
    }
    return CompletableFuture.completedFuture(PurgeStatus.PURGED);
  }

  @Override
  public synchronized CompletableFuture<LookupResult> lookupAsync(LookupRequest request) {
    Check.notNull(request, "request");
    Map<String, PodMatch> out = new LinkedHashMap<>();
    for (String pod : request.candidatePods()) {
      out.put(pod, match(request, pod));
    }
    return CompletableFuture.completedFuture(new LookupResult(out, true));
  }

  private PodMatch match(LookupRequest request, String pod) {
    Long deadline = deadlines.get(new Pod(request.model(), pod));
    boolean live = deadline != null && deadline >= now();
    int[] spec = speculativeTiers(request, pod, live);
    int depth = run(spec, 0xF);
    int confirmed = 0;
    int gpuDepth = run(spec, Tier.GPU.bit());
    int gpuCpuDepth = gpuDepth;
    double score = depth * config.bestWeight(Tier.GPU.bit());
    Map<Integer, Integer> ranks = new HashMap<>();
    for (Map.Entry<StreamId, Stream> e : streams.entrySet()) {
      StreamId id = e.getKey();
      if (!live
          || e.getValue().staged
          || !id.model().equals(request.model())
          || !id.pod().equals(pod)) {
        continue;
      }
      int[] own = tiers(e.getValue().tiers, request);
      confirmed = Math.max(confirmed, run(own, 0xF));
      for (int i = 0; i < own.length; i++) {
        own[i] |= spec[i];
      }
      int any = run(own, 0xF);
      if (any > 0) {
        ranks.put(id.dpRank(), any);
      }
      depth = Math.max(depth, any);
      gpuDepth = Math.max(gpuDepth, run(own, Tier.GPU.bit()));
      gpuCpuDepth = Math.max(gpuCpuDepth, run(own, Tier.GPU.bit() | Tier.CPU.bit()));
      double sum = 0;
      for (int i = 0; i < any; i++) {
        sum += config.bestWeight(own[i]);
      }
      score = Math.max(score, sum);
    }
    return new PodMatch(pod, depth, gpuDepth, gpuCpuDepth, score, ranks, depth > confirmed);
  }

  /**
   * GPU for each block the pod holds speculatively, else 0: a live pod holds the blocks its
   * unexpired routes credit ({@link #credited}).
   */
  private int[] speculativeTiers(LookupRequest request, String pod, boolean live) {
    int[] out = new int[request.length()];
    long now = now();
    int depth = 0;
    for (Route route :
        live
            ? speculative.getOrDefault(new Pod(request.model(), pod), List.of())
            : List.<Route>of()) {
      if (route.untilMillis() >= now
          && route.mode() == request.keyMode()
          && route.cacheGroup() == request.cacheGroup()) {
        depth = Math.max(depth, credited(request.blockKeys(), route.keys()));
      }
    }
    Arrays.fill(out, 0, Math.min(depth, out.length), Tier.GPU.bit());
    return out;
  }

  /**
   * The blocks of {@code prompt} a route of {@code route} credits (PrefixIndex#speculateAsync): in
   * each segment or span of the route (16 blocks each up to block 256, then 256), its head when the
   * prompt has the same key there, then each of the route's blocks there at a multiple of 16 and
   * its last, in order, while the prompt has the same key; the deepest so found.
   */
  static int credited(long[] prompt, long[] route) {
    int depth = 0;
    for (int start = 0; start < route.length && start < prompt.length; ) {
      int size = start < 256 ? 16 : 256;
      int end = Math.min(route.length, start + size);
      if (prompt[start] == route[start]) {
        depth = Math.max(depth, start + 1);
        for (int at = start + 15; ; at += 16) {
          int pos = Math.min(at, end - 1);
          if (pos >= prompt.length || prompt[pos] != route[pos]) {
            break;
          }
          depth = Math.max(depth, pos + 1);
          if (pos == end - 1) {
            break;
          }
        }
      }
      start += size;
    }
    return depth;
  }

  private static int[] tiers(Map<Block, Integer> tiers, LookupRequest request) {
    int[] out = new int[request.length()];
    for (int i = 0; i < out.length; i++) {
      Block block = new Block(request.keyMode(), request.cacheGroup(), request.blockKeys()[i]);
      out[i] = tiers.getOrDefault(block, 0);
    }
    return out;
  }

  private static int run(int[] tiers, int mask) {
    int i = 0;
    while (i < tiers.length && (tiers[i] & mask) != 0) {
      i++;
    }
    return i;
  }

  @Override
  public synchronized CompletableFuture<Optional<List<PodLiveness>>> livenessAsync(
      String model, List<String> pods) {
    Check.name(model, "model");
    long now = now();
    List<PodLiveness> out = new ArrayList<>(pods.size());
    for (String pod : pods) {
      out.add(new PodLiveness(pod, deadlines.get(new Pod(model, Check.name(pod, "pod"))), now));
    }
    return CompletableFuture.completedFuture(Optional.of(out));
  }

  @Override
  public synchronized CompletableFuture<Optional<List<String>>> livePodsAsync(String model) {
    Check.name(model, "model");
    long now = now();
    List<String> pods = new ArrayList<>();
    deadlines.forEach(
        (pod, deadline) -> {
          if (pod.model().equals(model) && deadline >= now) {
            pods.add(pod.pod());
          }
        });
    return CompletableFuture.completedFuture(Optional.of(pods));
  }

  @Override
  public synchronized CompletableFuture<Boolean> speculateAsync(
      String model, KeyMode mode, String pod, long[] blockKeys, int cacheGroup, Duration ttl) {
    if (!Lookups.checkSpeculation(model, mode, pod, blockKeys, ttl)) {
      return CompletableFuture.completedFuture(true);
    }
    Long deadline = deadlines.get(new Pod(model, pod));
    if (deadline == null || deadline < now()) {
      return CompletableFuture.completedFuture(false); // no live record: nothing to route to
    }
    long[] recorded = Arrays.copyOf(blockKeys, Math.min(blockKeys.length, MAX_ROUTE_BLOCKS));
    long until = now() + ttl.toMillis();
    List<Route> routes = speculative.computeIfAbsent(new Pod(model, pod), x -> new ArrayList<>());
    routes.removeIf(r -> r.untilMillis() < now());
    routes.add(new Route(mode, cacheGroup, recorded, until));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletableFuture<Boolean> noteReaderKeysAsync(
      String model, String modelKeys) {
    if (model != null) {
      Check.name(model, "model");
    }
    readerKeys.put(model == null ? "" : model, Check.notBlank(modelKeys, "modelKeys"));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletableFuture<Optional<Map<String, String>>> readerKeysAsync() {
    return CompletableFuture.completedFuture(Optional.of(Map.copyOf(readerKeys)));
  }

  @Override
  public synchronized CompletableFuture<Boolean> noteKeyCheckAsync(
      String model, KeyCheckNote note) {
    keyChecks.put(Check.name(model, "model"), Check.notNull(note, "note"));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletableFuture<Boolean> noteCacheLayoutAsync(
      String model, CacheLayout layout) {
    layouts.put(Check.name(model, "model"), Check.notNull(layout, "layout"));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletableFuture<Optional<CacheLayout>> cacheLayoutAsync(String model) {
    return CompletableFuture.completedFuture(
        Optional.ofNullable(layouts.get(Check.name(model, "model"))));
  }

  @Override
  public synchronized CompletableFuture<Optional<KeyCheckNote>> keyCheckAsync(String model) {
    return CompletableFuture.completedFuture(
        Optional.ofNullable(keyChecks.get(Check.name(model, "model"))));
  }

  @Override
  public synchronized Optional<Lease> acquireLease(StreamId stream, String owner, Duration ttl) {
    Check.notNull(stream, "stream");
    Check.name(owner, "owner");
    Held cur = live(stream);
    if (cur != null && !cur.lease().owner().equals(owner)) {
      return Optional.empty();
    }
    Lease lease = cur != null ? cur.lease() : new Lease(++fence, owner);
    leases.put(stream, new Held(lease, now() + ttl.toMillis()));
    return Optional.of(lease);
  }

  @Override
  public synchronized boolean renewLease(StreamId stream, Lease lease, Duration ttl) {
    if (!holds(stream, lease)) {
      return false;
    }
    leases.put(stream, new Held(lease, now() + ttl.toMillis()));
    return true;
  }

  @Override
  public synchronized boolean releaseLease(StreamId stream, Lease lease) {
    if (!holds(stream, lease)) {
      return false;
    }
    leases.remove(stream);
    leaseReleases++;
    return true;
  }

  @Override
  public synchronized long leaseReleases() {
    return leaseReleases;
  }

  private Held live(StreamId stream) {
    Held cur = leases.get(stream);
    return cur == null || cur.expiresAtMillis() <= now() ? null : cur;
  }

  private boolean holds(StreamId stream, Lease lease) {
    Held cur = live(stream);
    return cur != null && cur.lease().equals(lease);
  }

  /** The model never loses data, so it is never reset. */
  @Override
  public boolean checkIdentity() {
    return false;
  }

  @Override
  public void addResetListener(ResetListener listener) {
    Check.notNull(listener, "listener");
  }

  @Override
  public synchronized boolean heartbeat(String model, String pod, Duration ttl) {
    deadlines.put(
        new Pod(Check.name(model, "model"), Check.name(pod, "pod")), now() + ttl.toMillis());
    return true;
  }

  @Override
  public synchronized OptionalLong watermark(StreamId stream) {
    Stream s = streams.get(stream);
    return s == null || s.watermark == null ? OptionalLong.empty() : OptionalLong.of(s.watermark);
  }

  @Override
  public GcResult collectGarbage(int group, int budget) {
    Check.between(budget, 1, PrefixIndexBuilder.MAX_GC_BUDGET, "budget");
    return new GcResult(true, 0, 0, 0, GcResult.HOLDER_SLOTS, 0);
  }

  @Override
  public synchronized SweepResult sweepDeparted(int group, int budget) {
    if (group < 0 || group >= config.groups()) {
      throw new IllegalArgumentException(
          "group must be in [0, " + config.groups() + "), got " + group);
    }
    Check.atLeast(budget, 1, "budget");
    long cutoff = now() - config.departedRetention().toMillis();
    int scanned = streams.size() + deadlines.size();
    int before = streams.size();
    streams
        .keySet()
        .removeIf(
            id ->
                groupOf(id.model(), id.pod()) == group
                    && deadlines.getOrDefault(new Pod(id.model(), id.pod()), Long.MIN_VALUE)
                        < cutoff);
    int streamsForgotten = before - streams.size();
    before = deadlines.size();
    deadlines
        .entrySet()
        .removeIf(
            e -> groupOf(e.getKey().model(), e.getKey().pod()) == group && e.getValue() < cutoff);
    return new SweepResult(true, scanned, streamsForgotten, before - deadlines.size());
  }

  @Override
  public synchronized int registerReplica(String replica, Duration ttl) {
    Check.name(replica, "replica");
    long now = now();
    replicas.values().removeIf(until -> until <= now);
    replicas.put(replica, now + Check.atLeastOneMilli(ttl, "ttl").toMillis());
    return replicas.size();
  }

  @Override
  public synchronized void deregisterReplica(String replica) {
    replicas.remove(Check.name(replica, "replica"));
  }

  @Override
  public synchronized Optional<String> incarnation(StreamId stream) {
    return Optional.ofNullable(incarnations.get(Check.notNull(stream, "stream")));
  }

  @Override
  public synchronized boolean recordIncarnation(
      StreamId stream, String expected, String incarnation, Duration ttl) {
    Check.notNull(stream, "stream");
    Check.notBlank(incarnation, "incarnation");
    Check.atLeastOneMilli(ttl, "ttl");
    String current = incarnations.get(stream);
    if (incarnation.equals(current) || Objects.equals(current, expected)) {
      incarnations.put(stream, incarnation);
      return true;
    }
    return false;
  }

  @Override
  public synchronized CompletableFuture<ResyncStatus> requestResyncAsync(
      String model, String pod, String note, Duration interval) {
    Pod key = new Pod(Check.name(model, "model"), Check.name(pod, "pod"));
    String checked = Check.notNull(note, "note");
    Check.between(checked.length(), 0, MAX_RESYNC_NOTE, "note length");
    long until = now() + Check.atLeastOneMilli(interval, "interval").toMillis();
    Resync standing = resyncs.get(key);
    if (standing != null && standing.untilMillis() > now()) {
      return CompletableFuture.completedFuture(ResyncStatus.STANDING);
    }
    resyncs.put(key, new Resync(checked, new HashSet<>(), until));
    return CompletableFuture.completedFuture(ResyncStatus.REQUESTED);
  }

  @Override
  public synchronized Optional<String> takeResync(StreamId stream, Duration spacing) {
    Check.notNull(stream, "stream");
    long least = Check.atLeastOneMilli(spacing, "spacing").toMillis();
    Resync standing = resyncs.get(new Pod(stream.model(), stream.pod()));
    Long last = resyncsTaken.get(stream);
    if (standing == null
        || standing.untilMillis() <= now()
        || (last != null && now() - last < least)
        || !standing.takenByRank().add(stream.dpRank())) {
      return Optional.empty();
    }
    resyncsTaken.put(stream, now());
    return Optional.of(standing.note());
  }

  @Override
  public synchronized boolean markEvictionsInferred(
      String model, String pod, int capacityBlocks, Duration ttl) {
    Pod key = new Pod(Check.name(model, "model"), Check.name(pod, "pod"));
    Check.atLeast(capacityBlocks, 1, "capacityBlocks");
    long until = now() + Check.atLeastOneMilli(ttl, "ttl").toMillis();
    inferred.put(key, new Inferred(capacityBlocks, until));
    return true;
  }

  @Override
  public synchronized CompletableFuture<OptionalInt> evictionsInferredAsync(
      String model, String pod) {
    Inferred mark = inferred.get(new Pod(Check.name(model, "model"), Check.name(pod, "pod")));
    return CompletableFuture.completedFuture(
        mark == null || mark.untilMillis() <= now()
            ? OptionalInt.empty()
            : OptionalInt.of(mark.capacityBlocks()));
  }

  @Override
  public synchronized CompletableFuture<Boolean> touchAsync(
      String model,
      String pod,
      int rank,
      long[] blockKeys,
      int errorBlocks,
      int cachedBlocks,
      Duration ttl) {
    Pod key = new Pod(Check.name(model, "model"), Check.name(pod, "pod"));
    Check.notNull(blockKeys, "blockKeys");
    Check.atLeastOneMilli(ttl, "ttl");
    long[] first = Arrays.copyOf(blockKeys, Math.min(blockKeys.length, MAX_TOUCH_BLOCKS));
    ArrayDeque<Touched> kept = touches.computeIfAbsent(key, k -> new ArrayDeque<>());
    Touch touch = new Touch(rank, first, errorBlocks, cachedBlocks, now());
    kept.addLast(new Touched(++touchIds, touch));
    while (kept.size() > MAX_TOUCHES) {
      kept.removeFirst();
    }
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized Touches touches(StreamId stream, String cursor, int max) {
    Check.notNull(stream, "stream");
    Check.atLeast(max, 1, "max");
    ArrayDeque<Touched> pod =
        touches.getOrDefault(new Pod(stream.model(), stream.pod()), new ArrayDeque<>());
    if (cursor == null) {
      return new Touches(List.of(), Long.toString(pod.isEmpty() ? 0 : pod.getLast().id()), false);
    }
    long after = Long.parseLong(Check.notBlank(cursor, "cursor"));
    List<Touch> out = new ArrayList<>();
    long last = after;
    boolean more = false;
    for (Touched t : pod) {
      if (t.id() > after && out.size() < max) {
        out.add(t.touch());
        last = t.id();
      } else if (t.id() > after) {
        more = true;
      }
    }
    return new Touches(out, Long.toString(last), more);
  }

  @Override
  public synchronized CompletableFuture<Boolean> handOverInferenceAsync(
      StreamId stream, InferenceHandover handover, Duration ttl) {
    Check.notNull(stream, "stream");
    Check.notNull(handover, "handover");
    long until = now() + Check.atLeastOneMilli(ttl, "ttl").toMillis();
    handovers.put(stream, new HandedOver(handover, until));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized Optional<InferenceHandover> inferenceHandover(StreamId stream) {
    HandedOver h = handovers.get(Check.notNull(stream, "stream"));
    return h == null || h.untilMillis() <= now() ? Optional.empty() : Optional.of(h.handover());
  }

  @Override
  public synchronized CompletableFuture<Boolean> reportLagAsync(
      StreamId stream, Duration lag, Duration ttl) {
    Check.notNull(stream, "stream");
    long lagMs = Check.atLeast(Check.notNull(lag, "lag").toMillis(), 0, "lag ms");
    long until = now() + Check.atLeastOneMilli(ttl, "ttl").toMillis();
    Pod pod = new Pod(stream.model(), stream.pod());
    lagReports
        .computeIfAbsent(pod, p -> new HashMap<>())
        .put(stream.dpRank(), new long[] {now(), lagMs});
    lagUntil.put(pod, until);
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletableFuture<List<IngestLag>> ingestLagAsync(String model, String pod) {
    Pod key = new Pod(Check.name(model, "model"), Check.name(pod, "pod"));
    Long until = lagUntil.get(key);
    List<IngestLag> out = new ArrayList<>();
    if (until != null && until > now()) {
      lagReports
          .get(key)
          .forEach(
              (rank, r) ->
                  out.add(
                      new IngestLag(
                          rank, Duration.ofMillis(r[1]), Duration.ofMillis(now() - r[0]))));
    }
    return CompletableFuture.completedFuture(out);
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
  public void close() {}

  private long now() {
    return clock.millis();
  }
}
