package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.Lookups;
import io.kvindex.index.PodMatch;
import io.kvindex.inspect.IndexReport;
import io.kvindex.inspect.RedisInspector;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

/**
 * Compares the index with the simulator's ground truth at quiescence, two ways: per pod, the exact
 * set of blocks the index lists against the set the pod holds; and per lookup, each pod's matched
 * depth as the routers answer it against the depth the pod really holds. Not thread-safe: one audit
 * at a time.
 *
 * <p>A pod's set is checked without a lookup of every block the run ever produced. Lookups with
 * every pod a candidate show which pods' entries list each block some pod holds now, and the
 * index's count of each pod's entries ({@link RedisInspector}) shows whether it lists anything
 * more. The listed blocks equal the true ones when every true block is listed and the count is the
 * number of true blocks; a stale entry of any block, one no request of the run produced included,
 * shows as a count above it. The lookups first follow the run's requests, latest first, one lookup
 * per request: a pod's depth in a request's chain shows that many of its blocks listed at once. The
 * blocks no such lookup showed listed are then looked up one by one.
 *
 * <p>A hybrid model's other cache group (group 1) keeps scattered blocks (windows and states at
 * kept positions), not chains: each block some pod holds there is looked up one by one in that
 * group, and a pod's count of entries is checked against its blocks in both groups. A lookup's true
 * depth is then the hit the pod's engine would compute ({@link
 * io.kvindex.simulator.SimulatedPod#cachedPrefix}).
 */
public final class Auditor {
  private static final int IN_FLIGHT = 256;
  private static final int CHAINS_IN_FLIGHT = 16;
  private static final int SAMPLED_LOOKUPS = 400;
  private static final int ATTEMPTS = 5;

  private final Lookups index;
  private final RedisInspector inspector;
  private final RouterClient routers;
  private final Fleet fleet;
  private final List<String> pods;
  private final List<InferenceRequest> requests;
  private int chainLookups;
  private int blockLookups;
  private final BlockHasher hasher =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);

  public Auditor(
      Lookups index,
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
  public Accuracy audit() throws InterruptedException {
    Map<String, Set<Long>> truth = truth();
    Set<Long> held = new HashSet<>();
    truth.values().forEach(held::addAll);
    Map<String, Set<Long>> groupTruth = groupTruth();
    Set<Long> groupHeld = new HashSet<>();
    groupTruth.values().forEach(groupHeld::addAll);
    Map<String, String> wrongPods = wrongPods(truth, groupTruth);
    return new Accuracy(pods.size(), wrongPods, held.size() + groupHeld.size(), lookups(truth));
  }

  /**
   * A hybrid model's other group: the blocks each pod holds in group 1 (empty for a model of one
   * group).
   */
  private Map<String, Set<Long>> groupTruth() {
    Map<String, Set<Long>> truth = new LinkedHashMap<>();
    for (String pod : pods) {
      truth.put(
          pod,
          fleet.modelKind().hybrid() ? fleet.heldByGroup(pod).getOrDefault(1, Set.of()) : Set.of());
    }
    return truth;
  }

  /**
   * The simulator's ground truth: the blocks each pod holds, read once per audit (each read copies
   * a pod's whole cache).
   */
  Map<String, Set<Long>> truth() {
    Map<String, Set<Long>> truth = new LinkedHashMap<>();
    for (String pod : pods) {
      truth.put(pod, fleet.held(pod));
    }
    return truth;
  }

  /**
   * Each pod whose listed blocks differ from its true blocks ({@code truth}, as {@link #truth}
   * reads it), with how; a hybrid model's group-1 blocks ({@code groupTruth}) checked too.
   */
  Map<String, String> wrongPods(Map<String, Set<Long>> truth, Map<String, Set<Long>> groupTruth)
      throws InterruptedException {
    Map<String, Set<Long>> listed = new HashMap<>();
    Map<String, Set<Long>> groupListed = new HashMap<>();
    pods.forEach(p -> listed.put(p, ConcurrentHashMap.newKeySet()));
    pods.forEach(p -> groupListed.put(p, ConcurrentHashMap.newKeySet()));
    Set<Long> unseen = listedAlongRequests(truth, listed);
    listedOneByOne(unseen, listed, 0);
    Set<Long> groupBlocks = new HashSet<>();
    groupTruth.values().forEach(groupBlocks::addAll);
    listedOneByOne(groupBlocks, groupListed, 1);
    Map<String, Long> entries = entries();
    Map<String, String> wrongPods = new LinkedHashMap<>();
    for (String pod : pods) {
      Set<Long> blocks = truth.get(pod);
      Set<Long> missing = new HashSet<>(blocks);
      missing.removeAll(listed.get(pod));
      Set<Long> groupMissing = new HashSet<>(groupTruth.get(pod));
      groupMissing.removeAll(groupListed.get(pod));
      int heldBlocks = blocks.size() + groupTruth.get(pod).size();
      int missingBlocks = missing.size() + groupMissing.size();
      long counted = entries.getOrDefault(pod, 0L);
      long stale = counted - (heldBlocks - missingBlocks);
      if (missingBlocks != 0 || stale != 0) {
        wrongPods.put(
            pod,
            missingBlocks
                + " of "
                + heldBlocks
                + " held blocks missing"
                + (fleet.modelKind().hybrid()
                    ? " ("
                        + groupMissing.size()
                        + " of group 1's "
                        + groupTruth.get(pod).size()
                        + ")"
                    : "")
                + ", "
                + stale
                + " stale (the index counts "
                + counted
                + " entries)");
      }
    }
    return wrongPods;
  }

  /**
   * Follows the requests, latest first, while some pod holds a block no lookup showed listed for it
   * yet: one lookup of the request's chain shows each pod's listed prefix of it. Adds what it saw
   * to {@code listed}; returns the held blocks left unseen (listed or not).
   */
  private Set<Long> listedAlongRequests(Map<String, Set<Long>> truth, Map<String, Set<Long>> listed)
      throws InterruptedException {
    Map<String, Set<Long>> unseen = new LinkedHashMap<>();
    truth.forEach((pod, blocks) -> unseen.put(pod, ConcurrentHashMap.newKeySet()));
    truth.forEach((pod, blocks) -> unseen.get(pod).addAll(blocks));
    Semaphore inFlight = new Semaphore(CHAINS_IN_FLIGHT);
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (int r = requests.size() - 1; r >= 0; r--) {
      InferenceRequest request = requests.get(r);
      long[] chain = hasher.blockHashes(concat(request.promptTokens(), request.outputTokens()));
      if (!anyUnseen(chain, unseen)) {
        if (unseen.values().stream().allMatch(Set::isEmpty)) {
          break;
        }
        continue;
      }
      inFlight.acquire();
      chainLookups++;
      all.add(
          lookup(chain, 0, 3)
              .thenAccept(
                  result -> {
                    for (PodMatch m : result.pods().values()) {
                      if (m.speculative()) {
                        continue; // a router's unconfirmed routes: left to the next pass
                      }
                      for (int i = 0; i < m.depth(); i++) {
                        listed.get(m.pod()).add(chain[i]);
                        unseen.get(m.pod()).remove(chain[i]);
                      }
                    }
                  })
              .whenComplete((v, e) -> inFlight.release()));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
    Set<Long> left = new HashSet<>();
    unseen.values().forEach(left::addAll);
    return left;
  }

  private static boolean anyUnseen(long[] chain, Map<String, Set<Long>> unseen) {
    for (Set<Long> blocks : unseen.values()) {
      if (blocks.isEmpty()) {
        continue;
      }
      for (long k : chain) {
        if (blocks.contains(k)) {
          return true;
        }
      }
    }
    return false;
  }

  /** Lookups of a request's chain the audits so far made. */
  int chainLookups() {
    return chainLookups;
  }

  /** Lookups of one block the audits so far made. */
  int blockLookups() {
    return blockLookups;
  }

  /**
   * Adds to {@code listed} which pods the index lists each of {@code blocks} (of cache group {@code
   * group}) for.
   */
  private void listedOneByOne(Set<Long> blocks, Map<String, Set<Long>> listed, int group)
      throws InterruptedException {
    Semaphore inFlight = new Semaphore(IN_FLIGHT);
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (long key : blocks) {
      inFlight.acquire();
      blockLookups++;
      all.add(
          lookup(new long[] {key}, group, 3)
              .thenAccept(
                  r -> {
                    for (PodMatch m : r.pods().values()) {
                      if (m.depth() > 0) {
                        listed.get(m.pod()).add(key);
                      }
                    }
                  })
              .whenComplete((v, e) -> inFlight.release()));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
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

  private CompletableFuture<LookupResult> lookup(long[] keys, int group, int attempts) {
    return index
        .lookupAsync(
            new LookupRequest(
                Workloads.MODEL,
                KeyMode.ENGINE,
                keys,
                io.kvindex.index.CandidatePods.of(pods).asSet(),
                group))
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
              return lookup(keys, group, attempts - 1);
            });
  }

  /** Routers' depths against the true depths, over prompts sampled evenly from the run. */
  private LookupAccuracy lookups(Map<String, Set<Long>> truth) throws InterruptedException {
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
      String wrong =
          fleet.modelKind().hybrid()
              ? wrongHit(r, answer.path("pods"))
              : wrongDepth(keys, answer.path("pods"), truth);
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

  /** A hybrid model's lookup against the hit each pod's engine would compute for the prompt. */
  private String wrongHit(InferenceRequest r, JsonNode scored) {
    for (String pod : pods) {
      int hit = fleet.pod(pod).cachedPrefix(r, 0).depth();
      int answered = scored.path(pod).path("matched_blocks").asInt(0);
      if (answered != hit) {
        return pod
            + "'s engine would hit "
            + hit
            + " blocks of a prompt, the router said "
            + answered;
      }
    }
    return null;
  }

  private String wrongDepth(long[] keys, JsonNode scored, Map<String, Set<Long>> truth) {
    for (String pod : pods) {
      Set<Long> held = truth.get(pod);
      int depth = 0;
      while (depth < keys.length && held.contains(keys[depth])) {
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
   * @param blocksChecked distinct blocks some pod holds, each checked against every pod's entries
   * @param lookups the routers' depths against the true depths
   */
  public record Accuracy(
      int pods, Map<String, String> wrongPods, int blocksChecked, LookupAccuracy lookups) {
    public Accuracy {
      wrongPods = Map.copyOf(wrongPods);
    }

    public double podFraction() {
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
  public record LookupAccuracy(int sampled, int right, int unavailable, String firstWrong) {
    public double fraction() {
      return sampled == 0 ? 1 : (double) right / sampled;
    }

    boolean perfect() {
      return right == sampled;
    }
  }
}
