package io.kvindex.simulator;

import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.Tier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The ceiling of every router: {@link PodRouter#oracle}. Thread-safe.
 *
 * <p>Implementation notes. A decision scores every candidate from its engines' true caches at that
 * moment ({@link SimulatedPod#cachedPrefix}), the way an index with no lag and no lost event would
 * answer, plus the blocks of the requests this router sent to the pod and the pod has not served
 * yet: the engine will hold them by the time the request arrives. Those count as GPU blocks and
 * make the match speculative, as a router's recorded routes do, so no index, speculation included,
 * can know more. A pod's match is its best rank's, each rank being its own cache, and its score
 * sums each matched block's best tier weight, as the index's does (the index's default weights).
 * The pick is left to {@link OraclePick}, the router's own policy, with the load of {@link
 * RecentLoad}. The fleet reports each request served or refused ({@link #served}, {@link
 * #refused}), which ends its time in flight.
 */
final class OracleRouter implements PodRouter {
  private final OraclePick pick;
  private final Map<Tier, Double> weights = PrefixIndexBuilder.DEFAULT_TIER_WEIGHTS;
  private final RecentLoad load = new RecentLoad();
  private final Map<InferenceRequest, String> inFlight = new IdentityHashMap<>();

  OracleRouter(OraclePick pick) {
    this.pick = Objects.requireNonNull(pick, "pick");
  }

  @Override
  public SimulatedPod choose(InferenceRequest request, List<SimulatedPod> pods) {
    int[] prompt = request.promptTokens();
    Map<String, List<InferenceRequest>> pending = pending();
    List<PodMatch> matches = new ArrayList<>(pods.size());
    List<String> names = new ArrayList<>(pods.size());
    long affinity = 0;
    for (SimulatedPod pod : pods) {
      int ahead = aheadBlocks(request, prompt, pod, pending.getOrDefault(pod.name(), List.of()));
      Scored scored = match(pod, request, ahead);
      if (matches.isEmpty()) {
        affinity = scored.affinity;
      }
      matches.add(scored.match);
      names.add(pod.name());
    }
    Map<String, Double> loads = new HashMap<>();
    load.of(names).forEach((pod, n) -> loads.put(pod, n.doubleValue()));
    int blockSize = pods.get(0).config().blockSize();
    String chosen = pick.pick(affinity, blockKeys(prompt, blockSize), blockSize, matches, loads);
    int at = names.indexOf(chosen);
    if (at < 0) {
      throw new IllegalStateException(
          "the oracle's pick policy chose " + chosen + ", no candidate");
    }
    load.routed(chosen);
    synchronized (inFlight) {
      inFlight.put(request, chosen);
    }
    return pods.get(at);
  }

  @Override
  public void served(InferenceRequest request, Completion completion) {
    synchronized (inFlight) {
      inFlight.remove(request);
    }
  }

  @Override
  public void refused(InferenceRequest request, SimulatedPod pod) {
    synchronized (inFlight) {
      inFlight.remove(request);
    }
  }

  private Map<String, List<InferenceRequest>> pending() {
    Map<String, List<InferenceRequest>> out = new HashMap<>();
    synchronized (inFlight) {
      inFlight.forEach((r, pod) -> out.computeIfAbsent(pod, p -> new ArrayList<>()).add(r));
    }
    return out;
  }

  /** Chained keys of the prompt's full blocks: each depends on every token before it. */
  static long[] blockKeys(int[] prompt, int blockSize) {
    long[] keys = new long[blockSize <= 0 ? 0 : prompt.length / blockSize];
    long h = 0x9E3779B97F4A7C15L;
    for (int b = 0; b < keys.length; b++) {
      for (int t = b * blockSize; t < (b + 1) * blockSize; t++) {
        h = (h ^ prompt[t]) * 0x100000001B3L;
        h ^= h >>> 29;
      }
      keys[b] = h;
    }
    return keys;
  }

  private record Scored(PodMatch match, long affinity) {}

  /** The pod's best rank, with {@code ahead} blocks it will hold by then counted as GPU. */
  private Scored match(SimulatedPod pod, InferenceRequest request, int ahead) {
    int depth = 0;
    int gpuDepth = 0;
    int gpuCpuDepth = 0;
    int confirmed = 0;
    double score = 0;
    long affinity = 0;
    Map<Integer, Integer> ranks = new HashMap<>();
    for (StreamEndpoints e : pod.endpoints()) {
      CachedPrefix held = pod.cachedPrefix(request, e.rank());
      affinity = held.firstBlockHash();
      confirmed = Math.max(confirmed, held.depth());
      CachedPrefix then = withAhead(held, ahead);
      if (then.depth() > 0) {
        ranks.put(e.rank(), then.depth());
      }
      depth = Math.max(depth, then.depth());
      gpuDepth = Math.max(gpuDepth, then.depthIn(Tier.GPU.bit()));
      gpuCpuDepth = Math.max(gpuCpuDepth, then.depthIn(Tier.GPU.bit() | Tier.CPU.bit()));
      score = Math.max(score, score(then.tiers()));
    }
    return new Scored(
        new PodMatch(pod.name(), depth, gpuDepth, gpuCpuDepth, score, ranks, depth > confirmed),
        affinity);
  }

  private static CachedPrefix withAhead(CachedPrefix held, int ahead) {
    if (ahead == 0) {
      return held;
    }
    int[] tiers = Arrays.copyOf(held.tiers(), Math.max(held.depth(), ahead));
    for (int i = 0; i < ahead; i++) {
      tiers[i] |= Tier.GPU.bit();
    }
    return new CachedPrefix(held.firstBlockHash(), tiers);
  }

  private double score(int[] tiers) {
    double sum = 0;
    for (int bits : tiers) {
      double best = 0;
      for (Tier t : Tier.values()) {
        if ((bits & t.bit()) != 0) {
          best = Math.max(best, weights.get(t));
        }
      }
      sum += best;
    }
    return sum;
  }

  /**
   * The prompt blocks the pod will hold once the requests routed to it and not yet served are: the
   * full blocks each shares with the prompt (same LoRA and salt), as far as the engine caches it.
   */
  private static int aheadBlocks(
      InferenceRequest request, int[] prompt, SimulatedPod pod, List<InferenceRequest> routed) {
    int blockSize = pod.config().blockSize();
    if (pod.config().modelKind().hybrid()) {
      return hybridAheadBlocks(request, prompt, blockSize, routed);
    }
    int most = 0;
    for (InferenceRequest r : routed) {
      if (!Objects.equals(r.loraName(), request.loraName())
          || !Objects.equals(r.cacheSalt(), request.cacheSalt())) {
        continue;
      }
      int[] theirs = r.allTokens();
      int cached = (theirs.length - 1) / blockSize;
      int shared = Arrays.mismatch(prompt, theirs);
      shared = shared < 0 ? prompt.length : shared;
      most = Math.max(most, Math.min(shared / blockSize, cached));
    }
    return most;
  }

  /**
   * A hybrid engine's part of {@link #aheadBlocks}: a request it serves keeps its other group's
   * window or state only at its replay boundary (its junction depends on the cache it meets), so
   * the prompt gains that boundary if it shares the tokens up to it, within its own hit's cap.
   */
  private static int hybridAheadBlocks(
      InferenceRequest request, int[] prompt, int blockSize, List<InferenceRequest> routed) {
    int most = 0;
    int cap = Math.max(0, prompt.length - 1);
    for (InferenceRequest r : routed) {
      if (!Objects.equals(r.loraName(), request.loraName())
          || !Objects.equals(r.cacheSalt(), request.cacheSalt())) {
        continue;
      }
      int boundary = (r.promptLength() - 1) / blockSize * blockSize;
      int shared = Arrays.mismatch(prompt, r.promptTokens());
      shared = shared < 0 ? prompt.length : shared;
      if (boundary <= shared && boundary <= cap) {
        most = Math.max(most, boundary / blockSize);
      }
    }
    return most;
  }
}
