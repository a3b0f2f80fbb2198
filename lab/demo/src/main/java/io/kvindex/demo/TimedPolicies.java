package io.kvindex.demo;

import io.kvindex.index.PodMatch;
import io.kvindex.router.InFlight;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.Observation;
import io.kvindex.router.Pick;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.Scores;
import io.kvindex.simulator.CachedPrefix;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.TimedCompletion;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The routing policies compared in time ({@link TimedRun.Picker}s): round-robin, random,
 * least-loaded, the oracle, per-gateway approximate prefix routing and kvindex. Each instance
 * serves one run. Not thread-safe.
 */
final class TimedPolicies {
  private TimedPolicies() {}

  static TimedRun.Picker roundRobin() {
    int[] next = {0};
    return (request, gateway, fleet) -> {
      List<SimulatedPod> pods = fleet.pods();
      return pods.get(next[0]++ % pods.size()).name();
    };
  }

  static TimedRun.Picker random(long seed) {
    Random random = new Random(seed);
    return (request, gateway, fleet) ->
        fleet.pods().get(random.nextInt(fleet.pods().size())).name();
  }

  /** The pod with the fewest requests waiting and running (true queues); ties in turn. */
  static TimedRun.Picker leastLoaded() {
    int[] turn = {0};
    return (request, gateway, fleet) -> {
      List<SimulatedPod> pods = fleet.pods();
      int start = turn[0]++;
      String best = null;
      int least = Integer.MAX_VALUE;
      for (int i = 0; i < pods.size(); i++) {
        String pod = pods.get((start + i) % pods.size()).name();
        int q = fleet.queued(pod);
        if (q < least) {
          least = q;
          best = pod;
        }
      }
      return best;
    };
  }

  /**
   * The ceiling: the pods' true caches and queues at each request's arrival (requests waiting and
   * running as the load, their prompt tokens still to compute as the queued tokens), through {@code
   * policy}, the one kvindex's routers run.
   */
  static TimedRun.Picker oracle(PickPolicy policy) {
    return new Counting() {
      @Override
      public String pick(InferenceRequest request, int gateway, TimedRun.View fleet) {
        List<PodMatch> held = new ArrayList<>();
        List<String> names = new ArrayList<>();
        long affinity = 0;
        for (SimulatedPod pod : fleet.pods()) {
          CachedPrefix prefix = pod.cachedPrefix(request, 0);
          affinity = prefix.firstBlockHash();
          names.add(pod.name());
          int d = prefix.depth();
          if (d > 0) {
            held.add(new PodMatch(pod.name(), d, d, d, d, Map.of(0, d), false));
          }
        }
        Scores scores =
            new Scores(
                Workloads.MODEL,
                Workloads.BLOCK_SIZE,
                blockKeys(request),
                affinity,
                held,
                held.isEmpty() ? Scores.Outcome.MISS : Scores.Outcome.HIT);
        Pick pick =
            policy.pick(
                scores,
                names,
                new LoadSignal() {
                  @Override
                  public double load(String pod) {
                    return fleet.queued(pod);
                  }

                  @Override
                  public double queuedTokens(String pod) {
                    return fleet.pendingPrefillTokens(pod);
                  }
                });
        return count(pick);
      }
    };
  }

  /**
   * kvindex: each gateway has its own {@link RouterPolicy} (its own router replica first, its own
   * view of load: the requests it sent that are not finished), all reading one shared index.
   */
  static TimedRun.Picker kvindex(List<RouterPolicy> gateways) {
    Map<String, SimulatedPod> byName = new HashMap<>();
    return new TimedRun.Picker() {
      @Override
      public String pick(InferenceRequest request, int gateway, TimedRun.View fleet) {
        SimulatedPod pod = gateways.get(gateway).choose(request, fleet.pods());
        byName.put(pod.name(), pod);
        return pod.name();
      }

      @Override
      public void firstToken(InferenceRequest request, int gateway, String pod) {
        gateways.get(gateway).firstToken(request, pod);
      }

      @Override
      public void done(InferenceRequest request, int gateway, String pod, TimedCompletion done) {
        RouterPolicy g = gateways.get(gateway);
        if (done == null || Double.isNaN(done.firstToken())) {
          g.refused(request, byName.get(pod));
        } else {
          g.served(request, done.completion());
        }
      }

      @Override
      public Map<String, Integer> reasons() {
        Map<String, Integer> all = new TreeMap<>();
        gateways.forEach(g -> g.reasons().forEach((k, v) -> all.merge(k, v, Integer::sum)));
        return all;
      }
    };
  }

  /**
   * kvindex as a gateway embedding the router library routes: gateway {@code g} scores and picks
   * with {@code routers.get(g)} in its own process (no load of its own passed: the router adds the
   * fleet's, every gateway's requests counted through the index's shared load view, read beside
   * each lookup), counts each request there from its pick to its first token and its end ({@link
   * KvRouter#started}), and closes the loop with the engine's cached tokens ({@link
   * KvRouter#observe}).
   */
  static TimedRun.Picker embedded(List<KvRouter> routers) {
    Map<InferenceRequest, InFlight> inFlight = new IdentityHashMap<>();
    Map<InferenceRequest, Scores> scoresOf = new IdentityHashMap<>();
    Map<InferenceRequest, Pick> picks = new IdentityHashMap<>();
    return new Counting() {
      @Override
      public String pick(InferenceRequest request, int gateway, TimedRun.View fleet) {
        KvRouter router = routers.get(gateway);
        List<String> names = fleet.pods().stream().map(SimulatedPod::name).toList();
        Scores scores = router.score(Workloads.MODEL, null, request.promptTokens(), names);
        Pick pick = router.pick(scores, names, LoadSignal.none());
        inFlight.put(request, router.started(scores, pick, request.promptLength()));
        scoresOf.put(request, scores);
        picks.put(request, pick);
        return count(pick);
      }

      @Override
      public void firstToken(InferenceRequest request, int gateway, String pod) {
        InFlight f = inFlight.get(request);
        if (f != null) {
          f.firstToken();
        }
      }

      @Override
      public void done(InferenceRequest request, int gateway, String pod, TimedCompletion done) {
        InFlight f = inFlight.remove(request);
        if (f != null) {
          f.finished();
        }
        Scores scores = scoresOf.remove(request);
        Pick pick = picks.remove(request);
        if (done != null && !Double.isNaN(done.firstToken()) && scores != null) {
          Completion c = done.completion();
          routers
              .get(gateway)
              .observe(Observation.of(scores, pick, c.promptTokens(), c.cachedTokens()));
        }
      }
    };
  }

  /**
   * Per-gateway approximate prefix routing, as SGLang's cache-aware router and the Gateway API
   * inference extension's approximate prefix-cache plugin describe theirs: each gateway remembers
   * the prompt prefixes it sent to each pod (block by block, least recently used first out, as many
   * blocks per pod as a pod caches) and never hears what the engines really hold. A request goes to
   * the pod with the longest remembered prefix when that covers at least {@code matchThreshold} of
   * the prompt and the gateway's loads are balanced (its busiest pod at most {@code
   * balanceAbsolute} requests above its least busy one, or at most {@code balanceRatio} times it);
   * otherwise to the pod this gateway has the fewest requests in flight on.
   */
  static TimedRun.Picker approximatePrefix(
      int gateways,
      int blocksPerPod,
      double matchThreshold,
      int balanceAbsolute,
      double balanceRatio) {
    List<ApproximateTree> trees = new ArrayList<>();
    for (int g = 0; g < gateways; g++) {
      trees.add(new ApproximateTree(blocksPerPod));
    }
    return new Counting() {
      @Override
      public String pick(InferenceRequest request, int gateway, TimedRun.View fleet) {
        ApproximateTree tree = trees.get(gateway);
        long[] keys = blockKeys(request);
        int least = Integer.MAX_VALUE;
        int most = 0;
        String leastPod = null;
        for (SimulatedPod p : fleet.pods()) {
          int l = tree.inFlight.getOrDefault(p.name(), 0);
          if (l < least) {
            least = l;
            leastPod = p.name();
          }
          most = Math.max(most, l);
        }
        boolean balanced = most - least <= balanceAbsolute || most <= least * balanceRatio;
        String chosen = leastPod;
        String reason = "least_load";
        if (balanced && keys.length > 0) {
          String best = null;
          int bestDepth = 0;
          for (SimulatedPod p : fleet.pods()) {
            int d = tree.depth(p.name(), keys);
            if (d > bestDepth) {
              bestDepth = d;
              best = p.name();
            }
          }
          if (best != null && bestDepth >= matchThreshold * keys.length) {
            chosen = best;
            reason = "approximate_prefix";
          }
        } else if (!balanced) {
          reason = "imbalance";
        }
        tree.insert(chosen, keys);
        tree.inFlight.merge(chosen, 1, Integer::sum);
        reasons.merge(reason, 1, Integer::sum);
        return chosen;
      }

      @Override
      public void done(InferenceRequest request, int gateway, String pod, TimedCompletion done) {
        trees.get(gateway).inFlight.merge(pod, -1, Integer::sum);
      }
    };
  }

  /** One gateway's memory of what it sent where: per pod, an LRU set of block keys. */
  private static final class ApproximateTree {
    final int blocksPerPod;
    final Map<String, LinkedHashMap<Long, Boolean>> held = new HashMap<>();
    final Map<String, Integer> inFlight = new HashMap<>();

    ApproximateTree(int blocksPerPod) {
      this.blocksPerPod = blocksPerPod;
    }

    int depth(String pod, long[] keys) {
      LinkedHashMap<Long, Boolean> blocks = held.get(pod);
      if (blocks == null) {
        return 0;
      }
      int d = 0;
      while (d < keys.length && blocks.containsKey(keys[d])) {
        d++;
      }
      return d;
    }

    void insert(String pod, long[] keys) {
      LinkedHashMap<Long, Boolean> blocks =
          held.computeIfAbsent(
              pod,
              p ->
                  new LinkedHashMap<>(16, 0.75f, true) {
                    @Override
                    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                      return size() > blocksPerPod;
                    }
                  });
      for (long k : keys) {
        blocks.put(k, Boolean.TRUE);
      }
    }
  }

  /** A picker that counts what decided its picks. */
  private abstract static class Counting implements TimedRun.Picker {
    final Map<String, Integer> reasons = new TreeMap<>();

    String count(Pick pick) {
      reasons.merge(pick.reason().name().toLowerCase(java.util.Locale.ROOT), 1, Integer::sum);
      return pick.pod();
    }

    @Override
    public Map<String, Integer> reasons() {
      return Map.copyOf(reasons);
    }
  }

  /**
   * Chained keys of the prompt's full blocks (each depends on every token before it): what a prefix
   * tree keyed by blocks, or a tie-break, needs; not the engines' hashes.
   */
  static long[] blockKeys(InferenceRequest request) {
    int[] prompt = request.promptTokens();
    int blocks = prompt.length / Workloads.BLOCK_SIZE;
    long[] keys = new long[blocks];
    long h = 0x9E3779B97F4A7C15L;
    for (int b = 0; b < blocks; b++) {
      for (int t = b * Workloads.BLOCK_SIZE; t < (b + 1) * Workloads.BLOCK_SIZE; t++) {
        h = (h ^ prompt[t]) * 0x100000001B3L;
        h ^= h >>> 29;
      }
      keys[b] = h;
    }
    return keys;
  }
}
