package io.kvindex.ingester;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.hash.TokenKeys;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.Replays;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisConnector;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.testing.RedisTopology;
import io.kvindex.wire.EventMessage;
import io.kvindex.wire.KvEventDecoder;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.zeromq.ZContext;

/**
 * Ingesters on a test Redis, and an oracle that compares the index with simulated pods' ground
 * truth through lookups. Not thread-safe.
 */
final class Rig implements AutoCloseable {
  static final String INDEX = "ingester-test";

  private final String redisUri;
  private final RedisConnector connector;
  private final PrefixIndex index;
  private final List<Ingester> ingesters = new ArrayList<>();

  /** Each started ingester's fault hook: closing it freezes that replica before its next write. */
  private final Map<Ingester, Gate> gates = new ConcurrentHashMap<>();

  private final int groups;

  Rig(RedisTopology redis) {
    this(redis, 1);
  }

  /** A rig whose index spreads pods over {@code groups} index groups. */
  Rig(RedisTopology redis, int groups) {
    this.groups = groups;
    this.redisUri = redis.uris().stream().map(Rig::text).collect(Collectors.joining(","));
    this.connector =
        RedisConnector.builder().uri(redisUri).meterRegistry(new SimpleMeterRegistry()).build();
    this.index = PrefixIndex.builder().indexName(INDEX).groups(groups).redis(connector).build();
  }

  private static String text(RedisURI uri) {
    return "redis://" + uri.getHost() + ":" + uri.getPort();
  }

  String redisUri() {
    return redisUri;
  }

  RedisConnector connector() {
    return connector;
  }

  /** Test defaults: free HTTP port, short lease, fast retries. */
  IngesterConfig.Builder config(String replica) {
    return IngesterConfig.builder()
        .redisUri(redisUri)
        .indexName(INDEX)
        .indexGroups(groups)
        .replicaId(replica)
        .httpHost("127.0.0.1")
        .httpPort(0)
        .leaseTtl(Duration.ofMillis(1500))
        .replayIdleTimeout(Duration.ofSeconds(1))
        .reconcileInterval(Duration.ofMillis(200))
        .gcInterval(Duration.ofMillis(200))
        .retryMax(Duration.ofMillis(500))
        .idleCatchUp(Duration.ofMillis(500));
  }

  /** Starts an ingester over the given pods. */
  Ingester start(String replica, List<PodSpec> pods, UnaryOperator<IngesterConfig.Builder> tweak) {
    IngesterConfig config = tweak.apply(config(replica)).build();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Gate gate = new Gate();
    return started(Ingester.start(config, PodDiscovery.of(pods), registry, gate), gate);
  }

  Ingester start(String replica, List<PodSpec> pods) {
    return start(replica, pods, b -> b);
  }

  /** Starts an ingester whose discovery is whatever {@code pods} holds at each tick. */
  Ingester start(
      String replica,
      AtomicReference<List<PodSpec>> pods,
      UnaryOperator<IngesterConfig.Builder> tweak) {
    IngesterConfig config = tweak.apply(config(replica)).build();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Gate gate = new Gate();
    return started(Ingester.start(config, pods::get, registry, gate), gate);
  }

  /** Starts an ingester whose discovery is made for its meter registry. */
  Ingester start(String replica, Function<PrometheusMeterRegistry, PodDiscovery> discovery) {
    IngesterConfig config = config(replica).build();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Gate gate = new Gate();
    return started(Ingester.start(config, discovery.apply(registry), registry, gate), gate);
  }

  private Ingester started(Ingester ingester, Gate gate) {
    ingesters.add(ingester);
    gates.put(ingester, gate);
    return ingester;
  }

  /**
   * The gate {@code ingester}'s loops pass before each write: closing it freezes the replica in
   * place, as a stopped process would be (SIGSTOP), until it is opened again.
   */
  Gate gate(Ingester ingester) {
    return gates.get(ingester);
  }

  /**
   * Serves requests on a pod until its owner receives live batches: PUB drops what it sends before
   * the subscription is through (ZeroMQ's slow joiner), which tests of live faults must not mistake
   * for the fault.
   */
  void warmUp(Fleet fleet, SimulatedPod pod) {
    Await.until(
        Duration.ofSeconds(20),
        pod.name() + " live batches received",
        () -> {
          fleet.traffic(pod, 1);
          return ingesters.stream()
              .flatMap(i -> i.workers().values().stream())
              .anyMatch(w -> w.id().pod().equals(pod.name()) && w.status().liveReceived() > 0);
        });
  }

  /** Waits until some ingester has applied every batch the pod's rank 0 published. */
  void awaitCaughtUp(SimulatedPod pod, Duration timeout) {
    awaitCaughtUp(pod, 0, timeout);
  }

  /** Waits until some ingester has applied every batch the rank published. */
  void awaitCaughtUp(SimulatedPod pod, int rank, Duration timeout) {
    long last = pod.nextSequence(rank) - 1;
    Await.until(
        timeout,
        () ->
            pod.name() + "/dp" + rank + " applied through " + last + ", got " + applied(pod, rank),
        () -> applied(pod, rank) >= last);
  }

  private long applied(SimulatedPod pod, int rank) {
    long best = -1;
    for (Ingester i : ingesters) {
      for (StreamWorker w : i.workers().values()) {
        if (w.id().pod().equals(pod.name()) && w.id().dpRank() == rank) {
          best = Math.max(best, w.status().applied());
        }
      }
    }
    return best;
  }

  /** Waits until the index holds exactly the pod's GPU blocks among every hash ever held. */
  void awaitEqual(SimulatedPod pod, Set<Long> everHeld, Duration timeout) {
    awaitEqual(pod, 0, everHeld, timeout);
  }

  /** Waits until the index holds exactly the rank's GPU blocks among every hash ever held. */
  void awaitEqual(SimulatedPod pod, int rank, Set<Long> everHeld, Duration timeout) {
    Await.until(
        timeout,
        () -> pod.name() + "/dp" + rank + ": " + diff(pod, rank, everHeld),
        () -> diff(pod, rank, everHeld).isEmpty());
  }

  /** The hashes the index lists for the pod's rank 0 that its engine does not hold. */
  Set<Long> falsePositives(SimulatedPod pod, Set<Long> everHeld) {
    Set<Long> universe = new HashSet<>(everHeld);
    Set<Long> truth = pod.cachedBlocks(0, "GPU");
    universe.addAll(truth);
    Set<Long> extra = new TreeSet<>(held(pod.name(), 0, universe));
    extra.removeAll(truth);
    return extra;
  }

  /** The hashes on which the index and the rank's ground truth disagree (engine keys). */
  String diff(SimulatedPod pod, int rank, Set<Long> everHeld) {
    Set<Long> truth = new HashSet<>(pod.cachedBlocks(rank, "GPU"));
    Set<Long> universe = new HashSet<>(everHeld);
    universe.addAll(truth);
    Set<Long> indexed = held(pod.name(), rank, universe);
    Set<Long> missing = new TreeSet<>(truth);
    missing.removeAll(indexed);
    Set<Long> extra = new TreeSet<>(indexed);
    extra.removeAll(truth);
    if (missing.isEmpty() && extra.isEmpty()) {
      return "";
    }
    return "missing " + missing.size() + " of " + truth.size() + ", extra " + extra.size();
  }

  /** Which of these engine hashes the index lists for the pod (any rank). */
  /** A stream's watermark in the index, empty when it has none (or was forgotten). */
  OptionalLong watermark(String pod, int rank) {
    return index.watermark(new StreamId(Fleet.MODEL, pod, rank));
  }

  Set<Long> held(String pod, Set<Long> hashes) {
    return held(pod, -1, hashes);
  }

  /** Which of these engine hashes the index lists for a rank of the pod (-1: any rank). */
  Set<Long> held(String pod, int rank, Set<Long> hashes) {
    Set<Long> out = new HashSet<>();
    for (long h : hashes) {
      if (depth(index, KeyMode.ENGINE, pod, rank, List.of(h)) > 0) {
        out.add(h);
      }
    }
    return out;
  }

  /** A pod's matched depth for a chain of keys; retries the lookup while it is incomplete. */
  static int depth(PrefixIndex index, KeyMode mode, String pod, List<Long> keys) {
    return depth(index, mode, pod, -1, keys);
  }

  static int depth(PrefixIndex index, KeyMode mode, String pod, int rank, List<Long> keys) {
    for (int attempt = 0; attempt < 20; attempt++) {
      LookupResult r = index.lookup(LookupRequest.of(Fleet.MODEL, mode, keys, List.of(pod)));
      if (r.complete()) {
        PodMatch m = r.pods().get(pod);
        if (m == null) {
          return 0;
        }
        return rank < 0 ? m.depth() : m.rankDepths().getOrDefault(rank, 0);
      }
    }
    throw new AssertionError("lookups stay incomplete: is Redis unavailable?");
  }

  /**
   * Waits until the token-keyed index holds exactly the pod's GPU blocks among every hash ever
   * held, mapping engine hashes to token keys from the pod's own events (fetched by replay).
   */
  void awaitEqualInTokenMode(SimulatedPod pod, Set<Long> everHeld, Duration timeout) {
    Await.until(
        timeout,
        () -> pod.name() + " (token keys): " + tokenDiff(pod, everHeld),
        () -> tokenDiff(pod, everHeld).isEmpty());
  }

  private String tokenDiff(SimulatedPod pod, Set<Long> everHeld) {
    Map<Long, Long> toToken = tokenKeys(pod);
    Set<Long> truth = pod.cachedBlocks(0, "GPU");
    int missing = 0;
    int extra = 0;
    Set<Long> universe = new HashSet<>(everHeld);
    universe.addAll(truth);
    for (long h : universe) {
      Long key = toToken.get(h);
      if (key == null && truth.contains(h)) {
        return "no BlockStored seen for " + Long.toUnsignedString(h);
      } else if (key == null) {
        continue; // another pod's block
      }
      boolean held = depth(index, KeyMode.TOKEN, pod.name(), List.of(key)) > 0;
      if (truth.contains(h) && !held) {
        missing++;
      } else if (!truth.contains(h) && held) {
        extra++;
      }
    }
    return missing == 0 && extra == 0 ? "" : "missing " + missing + ", extra " + extra;
  }

  /** Engine hash to kvindex token key, from every BlockStored the pod's replay ring holds. */
  private static Map<Long, Long> tokenKeys(SimulatedPod pod) {
    Map<Long, Long> out = new HashMap<>();
    try (ZContext ctx = new ZContext()) {
      Replays.Result r =
          Replays.fetch(ctx, pod.endpoints().get(0).replay(), 0, Duration.ofSeconds(2));
      for (EventMessage f : r.batches()) {
        for (KvEvent e : KvEventDecoder.decode(f.payload()).events()) {
          if (e instanceof BlockStored s && s.blockSize() > 0) {
            int[] tokens = s.tokenIds().stream().mapToInt(Integer::intValue).toArray();
            Long parent = s.parentBlockHash() == null ? null : out.get(s.parentBlockHash());
            long key = parent != null ? parent : TokenKeys.root(pod.model(), s.loraName());
            for (int i = 0; i < s.blockHashes().size(); i++) {
              key = TokenKeys.next(key, tokens, i * s.blockSize(), (i + 1) * s.blockSize());
              out.put(s.blockHashes().get(i), key);
            }
          }
        }
      }
    }
    return out;
  }

  /** Whether some ingester has recorded an engine incarnation in Redis. */
  boolean incarnationRecorded() {
    return !connector
        .commands()
        .scan(
            ScanCursor.INITIAL,
            ScanArgs.Builder.matches(KeySchema.keyPattern(INDEX) + ":incarnation:*").limit(10_000))
        .toCompletableFuture()
        .join()
        .getKeys()
        .isEmpty();
  }

  PrefixIndex index() {
    return index;
  }

  @Override
  public void close() {
    for (Ingester i : ingesters) {
      i.close();
    }
    index.close();
    connector.close();
  }
}
