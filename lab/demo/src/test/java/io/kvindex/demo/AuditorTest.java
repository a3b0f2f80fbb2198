package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.Events;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.inspect.RedisInspector;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodRouter;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The auditor's per-pod check against an index written to mirror a real simulated fleet. */
@UsesRedis
class AuditorTest {
  /** A block hash no request of the fleet produced. */
  private static final long FOREIGN_BLOCK = 0x5eed_0000_0001L;

  @Test
  void wrongPods_exactMirror_none(RedisStandalone redis) throws Exception {
    try (Fixture f = new Fixture(redis, "exact")) {
      f.mirror("pod-0", List.of(), false);
      f.mirror("pod-1", List.of(), false);
      f.mirror("pod-2", List.of(), false);

      Auditor auditor = f.auditor();
      assertThat(wrongPods(auditor)).isEmpty();
      // One lookup per request's chain showed every held block listed: none was looked up alone.
      assertThat(auditor.chainLookups()).isEqualTo(6);
      assertThat(auditor.blockLookups()).isZero();
    }
  }

  /**
   * A stale entry of a block no request produced is found (by the pod's entry count), as is a true
   * block the index does not list.
   */
  @Test
  void wrongPods_staleForeignBlockAndMissingBlock_bothNamed(RedisStandalone redis)
      throws Exception {
    try (Fixture f = new Fixture(redis, "wrong")) {
      f.mirror("pod-0", List.of(FOREIGN_BLOCK), false);
      f.mirror("pod-1", List.of(), true);
      f.mirror("pod-2", List.of(), false);

      Auditor auditor = f.auditor();
      Map<String, String> wrong = wrongPods(auditor);

      assertThat(wrong).containsOnlyKeys("pod-0", "pod-1");
      assertThat(wrong.get("pod-0"))
          .startsWith("0 of " + f.fleet.held("pod-0").size() + " held blocks missing, 1 stale");
      assertThat(wrong.get("pod-1"))
          .startsWith("1 of " + f.fleet.held("pod-1").size() + " held blocks missing, 0 stale");
      // The block missing from pod-1's chain is the one no chain lookup showed listed.
      assertThat(auditor.blockLookups()).isEqualTo(1);
    }
  }

  /**
   * A pod whose prefix cache was reset while it serves nothing: its engine has not published the
   * AllBlocksCleared (vLLM sends it with the next step), so the index still lists all it held. The
   * audit counts every one of those entries stale: an unpublished clear cannot pass it.
   */
  @Test
  void wrongPods_resetNotYetPublished_everyEntryStale(RedisStandalone redis) throws Exception {
    try (Fixture f = new Fixture(redis, "reset")) {
      f.mirror("pod-0", List.of(), false);
      f.mirror("pod-1", List.of(), false);
      f.mirror("pod-2", List.of(), false);
      int listed = f.fleet.held("pod-0").size();

      f.fleet.pod("pod-0").resetPrefixCache();
      Auditor auditor = f.auditor();
      Map<String, String> wrong = wrongPods(auditor);

      assertThat(listed).isPositive();
      assertThat(wrong).containsOnlyKeys("pod-0");
      assertThat(wrong.get("pod-0")).startsWith("0 of 0 held blocks missing, " + listed + " stale");
    }
  }

  /**
   * Three pods of 64 blocks that served six requests of 20 blocks round-robin (none evicted), and
   * an empty index.
   */
  private static final class Fixture implements AutoCloseable {
    private static final BlockHasher HASHER =
        BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);

    final Fleet fleet;
    final RedisConnector connector;
    final PrefixIndex index;
    final String indexName;
    final List<InferenceRequest> requests = new ArrayList<>();

    Fixture(RedisStandalone redis, String indexName) {
      this.indexName = indexName;
      fleet = Fleet.start(DemoConfig.builder().pods(3).build(), 64, false);
      connector = RedisConnector.connect(redis.uri().toURI().toString());
      // As the demo's auditor reads it: with the default retries, not a router's lookup budget.
      index =
          PrefixIndex.builder()
              .indexName(indexName)
              .lookupPolicy(RetryPolicy.defaults())
              .redis(connector)
              .build();
      PodRouter roundRobin = PodRouter.roundRobin();
      for (int r = 0; r < 6; r++) {
        requests.add(request(r));
        fleet.submit(requests.get(r), roundRobin);
      }
    }

    /**
     * Writes the pod's true blocks into the index as the engine stored them, one chain per request
     * it served (the first one's last block left out if asked), then {@code extra} blocks.
     */
    void mirror(String pod, List<Long> extra, boolean dropOne) {
      int index = fleet.names().indexOf(pod);
      Set<Long> truth = fleet.held(pod);
      StreamId stream = StreamId.of(Workloads.MODEL, pod);
      Lease lease =
          this.index.acquireLease(stream, "auditor-test", Duration.ofMinutes(1)).orElseThrow();
      long seq = 0;
      for (int r = index; r < requests.size(); r += fleet.names().size()) {
        InferenceRequest request = requests.get(r);
        List<Long> chain = new ArrayList<>();
        for (long block : HASHER.blockHashes(request.allTokens())) {
          chain.add(block);
        }
        assertThat(truth).as("blocks %s holds", pod).containsAll(chain);
        if (dropOne && r == index) {
          chain.remove(chain.size() - 1);
        }
        apply(stream, seq++, lease, chain);
      }
      for (long block : extra) {
        apply(stream, seq++, lease, List.of(block));
      }
      this.index.heartbeat(Workloads.MODEL, pod, Duration.ofMinutes(1));
    }

    private void apply(StreamId stream, long seq, Lease lease, List<Long> chain) {
      index.apply(
          stream, KeyMode.ENGINE, seq, lease, Events.batch(Events.stored(chain, null, null)));
    }

    Auditor auditor() {
      return new Auditor(
          index, RedisInspector.of(connector, indexName), null, fleet, List.copyOf(requests));
    }

    private static InferenceRequest request(int r) {
      int[] prompt = new int[20 * Workloads.BLOCK_SIZE];
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = 1 + r * 100_000 + i;
      }
      return InferenceRequest.of(prompt, new int[] {7, 8, 9});
    }

    @Override
    public void close() {
      index.close();
      connector.close();
      fleet.close();
    }
  }

  /** The pods whose listed blocks differ from their true ones, a model of one group. */
  private static Map<String, String> wrongPods(Auditor auditor) throws InterruptedException {
    Map<String, Set<Long>> truth = auditor.truth();
    Map<String, Set<Long>> noGroup = new HashMap<>();
    truth.keySet().forEach(p -> noGroup.put(p, Set.of()));
    return auditor.wrongPods(truth, noGroup);
  }
}
