package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.redis.IndexReport;
import io.kvindex.index.redis.RedisInspector;
import io.kvindex.simulator.InferenceRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

/**
 * Compares the index with the simulator's ground truth at quiescence, two ways: per pod, the exact
 * set of blocks the index lists against the set the pod holds; and per lookup, each pod's matched
 * depth as the routers answer it against the depth the pod really holds. Not thread-safe: one audit
 * at a time.
 *
 * <p>A pod's set is checked without a lookup of every block the run ever produced: one lookup per
 * block some pod holds now (with every pod a candidate) shows which pods' entries list it, and the
 * index's count of each pod's entries ({@link RedisInspector}) shows whether it lists anything
 * more. The listed blocks equal the true ones when every true block is listed and the count is the
 * number of true blocks; a stale entry of any block, one no request of the run produced included,
 * shows as a count above it.
 */
final class Auditor {
  private static final int IN_FLIGHT = 256;
  private static final int SAMPLED_LOOKUPS = 400;
  private static final int ATTEMPTS = 5;

  private final PrefixIndex index;
  private final RedisInspector inspector;
  private final RouterClient routers;
  private final Fleet fleet;
  private final List<String> pods;
  private final List<InferenceRequest> requests;
  private final BlockHasher hasher =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);

  Auditor(
      PrefixIndex index,
      RedisInspector inspector,
      RouterClient routers,
      Fleet fleet,
      List<InferenceRequest> requests) {
    this.index = index;
    this.inspector = inspector;
    this.routers = routers;
    this.fleet = fleet;
    this.pods = fleet.names();
    this.requests = List.copyOf(requests);
  }

  /** Audits the index as it is now. */
  Accuracy audit() throws InterruptedException {
    Set<Long> held = new HashSet<>();
    Map<String, String> wrongPods = wrongPods(held);
    return new Accuracy(pods.size(), wrongPods, held.size(), lookups());
  }

  /**
   * Each pod whose listed blocks differ from its true blocks, with how; adds to {@code held} every
   * block some pod holds (each was looked up once).
   */
  Map<String, String> wrongPods(Set<Long> held) throws InterruptedException {
    Map<String, Set<Long>> truth = new LinkedHashMap<>();
    for (String pod : pods) {
      Set<Long> blocks = fleet.held(pod);
      truth.put(pod, blocks);
      held.addAll(blocks);
    }
    Map<String, Set<Long>> listed = listed(held);
    Map<String, Long> entries = entries();
    Map<String, String> wrongPods = new LinkedHashMap<>();
    for (String pod : pods) {
      Set<Long> blocks = truth.get(pod);
      Set<Long> missing = new HashSet<>(blocks);
      missing.removeAll(listed.get(pod));
      long counted = entries.getOrDefault(pod, 0L);
      long stale = counted - (blocks.size() - missing.size());
      if (!missing.isEmpty() || stale != 0) {
        wrongPods.put(
            pod,
            missing.size()
                + " of "
                + blocks.size()
                + " held blocks missing, "
                + stale
                + " stale (the index counts "
                + counted
                + " entries)");
      }
    }
    return wrongPods;
  }

  /** Which of {@code blocks} the index lists for each pod: one lookup per block. */
  private Map<String, Set<Long>> listed(Set<Long> blocks) throws InterruptedException {
    Map<String, Set<Long>> out = new HashMap<>();
    pods.forEach(p -> out.put(p, java.util.concurrent.ConcurrentHashMap.newKeySet()));
    Semaphore inFlight = new Semaphore(IN_FLIGHT);
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (long key : blocks) {
      inFlight.acquire();
      all.add(
          lookup(List.of(key), 3)
              .thenAccept(
                  r -> {
                    for (PodMatch m : r.pods().values()) {
                      if (m.depth() > 0) {
                        out.get(m.pod()).add(key);
                      }
                    }
                  })
              .whenComplete((v, e) -> inFlight.release()));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
    return out;
  }

  /** Each pod's block entries as the index counts them, over its ranks' published slots. */
  private Map<String, Long> entries() {
    Map<String, Long> out = new HashMap<>();
    for (IndexReport.Pod pod : inspector.read(Workloads.MODEL, null).pods()) {
      long n = 0;
      for (IndexReport.Rank rank : pod.ranks()) {
        if (!rank.staged()) {
          n += rank.blocks().all();
        }
      }
      out.put(pod.pod(), n);
    }
    return out;
  }

  private CompletableFuture<LookupResult> lookup(List<Long> keys, int attempts) {
    return index
        .lookupAsync(LookupRequest.of(Workloads.MODEL, KeyMode.ENGINE, keys, pods))
        .thenCompose(
            r -> {
              if (r.complete()) {
                return CompletableFuture.completedFuture(r);
              }
              if (attempts <= 1) {
                return CompletableFuture.failedFuture(
                    new IllegalStateException(
                        "audit lookups stay incomplete: Redis keeps failing temporarily"));
              }
              return lookup(keys, attempts - 1);
            });
  }

  /** Routers' depths against the true depths, over prompts sampled evenly from the run. */
  private LookupAccuracy lookups() throws InterruptedException {
    int samples = Math.min(SAMPLED_LOOKUPS, requests.size());
    int right = 0;
    int unavailable = 0;
    String firstWrong = null;
    for (int s = 0; s < samples; s++) {
      InferenceRequest r = requests.get((int) ((long) s * requests.size() / samples));
      long[] keys = hasher.blockHashes(r.promptTokens());
      JsonNode answer = answered(r.promptTokens());
      if (answer == null) {
        unavailable++;
        continue;
      }
      String wrong = wrongDepth(keys, answer.path("pods"));
      if (wrong == null) {
        right++;
      } else if (firstWrong == null) {
        firstWrong = wrong;
      }
    }
    return new LookupAccuracy(samples, right, unavailable, firstWrong);
  }

  /**
   * The routers' answer, asked up to {@value #ATTEMPTS} times: a lookup past the router's budget
   * ("index unavailable") says nothing about the index's accuracy. Null if none answered.
   */
  private JsonNode answered(int[] prompt) throws InterruptedException {
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      try {
        JsonNode answer = routers.score(prompt, pods, null);
        if (answer.path("index_available").asBoolean(false)) {
          return answer;
        }
      } catch (IOException e) {
        // asked again below
      }
    }
    return null;
  }

  private String wrongDepth(long[] keys, JsonNode scored) {
    for (String pod : pods) {
      Set<Long> truth = fleet.held(pod);
      int depth = 0;
      while (depth < keys.length && truth.contains(keys[depth])) {
        depth++;
      }
      int answered = scored.path(pod).path("matched_blocks").asInt(0);
      if (answered != depth) {
        return pod + " holds " + depth + " blocks of a prompt, the router said " + answered;
      }
    }
    return null;
  }

  /**
   * The index against ground truth. Immutable.
   *
   * @param pods pods audited
   * @param wrongPods each pod whose listed blocks differ from its true blocks, with how
   * @param blocksChecked distinct blocks some pod holds, each looked up once
   * @param lookups the routers' depths against the true depths
   */
  record Accuracy(
      int pods, Map<String, String> wrongPods, int blocksChecked, LookupAccuracy lookups) {
    Accuracy {
      wrongPods = Map.copyOf(wrongPods);
    }

    double podFraction() {
      return (double) (pods - wrongPods.size()) / pods;
    }

    boolean perfect() {
      return wrongPods.isEmpty() && lookups.perfect();
    }
  }

  /**
   * Sampled lookups through the routers. Immutable.
   *
   * @param sampled prompts looked up
   * @param right lookups where every pod's depth was the true one
   * @param unavailable lookups the router could not answer (index unavailable)
   * @param firstWrong the first wrong depth, or {@code null}
   */
  record LookupAccuracy(int sampled, int right, int unavailable, String firstWrong) {
    double fraction() {
      return sampled == 0 ? 1 : (double) right / sampled;
    }

    boolean perfect() {
      return right == sampled;
    }
  }
}
