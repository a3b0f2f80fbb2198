package io.kvindex.index;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The obviously-correct model of {@link PrefixIndex}: plain maps under one lock, the same semantics
 * as the Redis index (except that purged entries vanish at once, so there is no garbage). For tests
 * and as the reference the Redis index is checked against. Thread-safe.
 */
final class InMemoryPrefixIndex implements PrefixIndex {
  private record Block(int cacheGroup, long key) {}

  private record Pod(String model, String pod) {}

  private record SpecBlock(KeyMode mode, int cacheGroup, long key) {}

  private record Lease(long token, String owner, long expiresAtMillis) {}

  private static final class Stream {
    Long watermark;
    final Map<Block, Integer> tiers = new HashMap<>();
    final Map<Block, Long> tokenMap = new HashMap<>();
  }

  private final IndexConfig config;
  private final KeySchema keys;
  private final InstantSource clock;
  private final Map<StreamId, Stream> streams = new HashMap<>();
  private final Map<Pod, Long> deadlines = new HashMap<>();
  private final Map<Pod, Map<SpecBlock, Long>> speculative = new HashMap<>();
  private final Map<StreamId, Lease> leases = new HashMap<>();
  private long fence;

  InMemoryPrefixIndex(IndexConfig config, InstantSource clock) {
    this.config = config;
    this.keys = new KeySchema(config.indexName(), config.groups());
    this.clock = clock;
  }

  @Override
  public synchronized CompletableFuture<ApplyResult> applyAsync(
      StreamId stream, long seq, long fencingToken, KvEventBatch batch) {
    Names.notNull(stream, "stream");
    Names.notNull(batch, "batch");
    if (seq < 0 || seq > 1L << 53) {
      throw new IllegalArgumentException("seq must be in [0, 2^53], got " + seq);
    }
    return CompletableFuture.completedFuture(applyNow(stream, seq, fencingToken, batch.events()));
  }

  private ApplyResult applyNow(StreamId id, long seq, long token, List<KvEvent> events) {
    if (!holds(id, token)) {
      return ApplyResult.of(ApplyStatus.FENCED, -1);
    }
    Stream s = streams.computeIfAbsent(id, x -> new Stream());
    if (s.watermark != null && seq <= s.watermark) {
      return ApplyResult.of(ApplyStatus.DUPLICATE, s.watermark);
    }
    if (s.watermark != null && seq > s.watermark + 1) {
      return ApplyResult.of(ApplyStatus.GAP, s.watermark);
    }
    KeyMode mode = config.keyMode(id.model());
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
    deadlines.put(new Pod(id.model(), id.pod()), now() + config.podTtl().toMillis());
    return new ApplyResult(ApplyStatus.APPLIED, seq, counts[0], counts[1], counts[2]);
  }

  private static void store(Stream s, KeyMode mode, String model, BlockStored e, int[] counts) {
    int cg = EventPacker.cacheGroup(e.groupIdx());
    int bit = Tier.of(e.medium()).bit();
    int n = e.blockHashes().size();
    if (mode == KeyMode.ENGINE) {
      e.blockHashes().forEach(h -> s.tiers.merge(new Block(cg, h), bit, (a, b) -> a | b));
      counts[0] += n;
      return;
    }
    if (n == 0) {
      return;
    }
    Long prev =
        e.parentBlockHash() == null
            ? Long.valueOf(TokenKeys.root(model, e.loraName()))
            : s.tokenMap.get(new Block(cg, e.parentBlockHash()));
    if (!EventPacker.tokensMatch(e) || prev == null) {
      counts[2] += n;
      return;
    }
    int[] tokens = e.tokenIds().stream().mapToInt(Integer::intValue).toArray();
    long key = prev;
    for (int i = 0; i < n; i++) {
      key = TokenKeys.next(key, tokens, i * e.blockSize(), (i + 1) * e.blockSize());
      s.tokenMap.put(new Block(cg, e.blockHashes().get(i)), key);
      s.tiers.merge(new Block(cg, key), bit, (a, b) -> a | b);
    }
    counts[0] += n;
  }

  private static void remove(Stream s, KeyMode mode, BlockRemoved e, int[] counts) {
    int cg = EventPacker.cacheGroup(e.groupIdx());
    int bit = Tier.of(e.medium()).bit();
    for (long hash : e.blockHashes()) {
      Block engine = new Block(cg, hash);
      Block block = engine;
      if (mode == KeyMode.TOKEN) {
        Long key = s.tokenMap.get(engine);
        if (key == null) {
          counts[2]++;
          continue;
        }
        block = new Block(cg, key);
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
      StreamId stream, long fencingToken, PurgeMode mode) {
    Names.notNull(stream, "stream");
    Names.notNull(mode, "mode");
    if (!holds(stream, fencingToken)) {
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
    Names.notNull(request, "request");
    Map<String, PodMatch> out = new LinkedHashMap<>();
    for (String pod : request.candidatePods()) {
      out.put(pod, match(request, pod));
    }
    return CompletableFuture.completedFuture(new LookupResult(out, true));
  }

  private PodMatch match(LookupRequest request, String pod) {
    Long deadline = deadlines.get(new Pod(request.model(), pod));
    boolean live =
        deadline != null
            && deadline >= now()
            && config.keyMode(request.model()) == request.keyMode();
    int[] spec = speculativeTiers(request, pod);
    int depth = run(spec, 0xF);
    int confirmed = 0;
    int gpuDepth = run(spec, Tier.GPU.bit());
    int gpuCpuDepth = gpuDepth;
    double score = depth * config.bestWeight(Tier.GPU.bit());
    Map<Integer, Integer> ranks = new HashMap<>();
    for (Map.Entry<StreamId, Stream> e : streams.entrySet()) {
      StreamId id = e.getKey();
      if (!live || !id.model().equals(request.model()) || !id.pod().equals(pod)) {
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

  /** GPU for each block the pod holds speculatively (unexpired), else 0. */
  private int[] speculativeTiers(LookupRequest request, String pod) {
    Map<SpecBlock, Long> entries =
        speculative.getOrDefault(new Pod(request.model(), pod), Map.of());
    int[] out = new int[request.blockKeys().size()];
    long now = now();
    for (int i = 0; i < out.length; i++) {
      Long until =
          entries.get(
              new SpecBlock(request.keyMode(), request.cacheGroup(), request.blockKeys().get(i)));
      out[i] = until != null && until >= now ? Tier.GPU.bit() : 0;
    }
    return out;
  }

  private static int[] tiers(Map<Block, Integer> tiers, LookupRequest request) {
    int[] out = new int[request.blockKeys().size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = tiers.getOrDefault(new Block(request.cacheGroup(), request.blockKeys().get(i)), 0);
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
  public synchronized CompletableFuture<Optional<List<String>>> livePods(String model) {
    Names.check(model, "model");
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
      String model, KeyMode mode, String pod, List<Long> blockKeys, int cacheGroup, Duration ttl) {
    Names.check(model, "model");
    Names.check(pod, "pod");
    Names.notNull(mode, "mode");
    if (ttl == null || ttl.toMillis() < 1) {
      throw new IllegalArgumentException("ttl must be at least 1 ms, got " + ttl);
    }
    Map<SpecBlock, Long> entries =
        speculative.computeIfAbsent(new Pod(model, pod), x -> new HashMap<>());
    long until = now() + ttl.toMillis();
    for (long key : blockKeys) {
      entries.put(new SpecBlock(mode, cacheGroup, key), until);
    }
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized OptionalLong acquireLease(StreamId stream, String owner, Duration ttl) {
    Names.notNull(stream, "stream");
    Names.check(owner, "owner");
    long now = now();
    Lease cur = live(stream);
    if (cur != null && !cur.owner().equals(owner)) {
      return OptionalLong.empty();
    }
    long token = cur != null ? cur.token() : ++fence;
    leases.put(stream, new Lease(token, owner, now + ttl.toMillis()));
    return OptionalLong.of(token);
  }

  @Override
  public synchronized boolean renewLease(StreamId stream, String owner, long token, Duration ttl) {
    Lease cur = live(stream);
    if (cur == null || cur.token() != token || !cur.owner().equals(owner)) {
      return false;
    }
    leases.put(stream, new Lease(token, owner, now() + ttl.toMillis()));
    return true;
  }

  @Override
  public synchronized boolean releaseLease(StreamId stream, String owner, long token) {
    Lease cur = live(stream);
    if (cur == null || cur.token() != token || !cur.owner().equals(owner)) {
      return false;
    }
    leases.remove(stream);
    return true;
  }

  private Lease live(StreamId stream) {
    Lease cur = leases.get(stream);
    return cur == null || cur.expiresAtMillis() <= now() ? null : cur;
  }

  private boolean holds(StreamId stream, long token) {
    Lease cur = live(stream);
    return cur != null && cur.token() == token;
  }

  @Override
  public synchronized boolean heartbeat(String model, String pod, Duration ttl) {
    deadlines.put(
        new Pod(Names.check(model, "model"), Names.check(pod, "pod")), now() + ttl.toMillis());
    return true;
  }

  @Override
  public synchronized OptionalLong watermark(StreamId stream) {
    Stream s = streams.get(stream);
    return s == null || s.watermark == null ? OptionalLong.empty() : OptionalLong.of(s.watermark);
  }

  @Override
  public GcResult collectGarbage(int group, int budget) {
    return new GcResult(true, 0, 0, 0);
  }

  @Override
  public void collectAllGarbage() {}

  @Override
  public synchronized SweepResult sweepDeparted(int group, int budget) {
    if (group < 0 || group >= config.groups()) {
      throw new IllegalArgumentException(
          "group must be in [0, " + config.groups() + "), got " + group);
    }
    Names.atLeast(budget, 1, "budget");
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
  public int groupOf(String model, String pod) {
    return keys.groupOf(Names.check(model, "model"), Names.check(pod, "pod"));
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
