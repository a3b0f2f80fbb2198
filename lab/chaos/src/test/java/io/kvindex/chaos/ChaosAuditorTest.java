package io.kvindex.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvindex.demo.DemoConfig;
import io.kvindex.demo.Fleet;
import io.kvindex.demo.RouterClient;
import io.kvindex.demo.Stack;
import io.kvindex.demo.Workloads;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.Events;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.router.KvRouter;
import io.kvindex.router.http.ScoringServer;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The chaos auditor's accounting against a real router over HTTP on a real index: a pod that
 * dropped blocks just before the auditor's first look, or between two looks, whose removal the
 * index has not applied yet.
 */
@UsesRedis
class ChaosAuditorTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * The blocks went before the first snapshot, well within the grace of every lookup: a router may
   * still credit them, so no lookup is a false positive (the auditor used to count each one, and
   * say the removal was applied when the index had not even received it).
   */
  @Test
  void check_blocksDroppedJustBeforeTheFirstSnapshot_withinTheGrace_noFalsePositive(
      RedisStandalone redis) throws Exception {
    try (Fixture f = new Fixture(redis, "dropped-before-start")) {
      try (ChaosAuditor auditor = f.auditor(Duration.ofMinutes(1))) {
        auditor.start();
        ObjectNode figures = f.afterChecks(auditor, 6);

        assertThat(figures.path("false_positives").asLong()).as("%s", figures).isZero();
      }
    }
  }

  /**
   * The same blocks, the lookups now past the grace with the removal still not applied: each is a
   * false positive, counted as ingest lag (the index is behind the engine), not as a removal the
   * index applied and still credits.
   */
  @Test
  void check_blocksDroppedBeforeTheFirstSnapshot_pastTheGrace_countedAsIngestLag(
      RedisStandalone redis) throws Exception {
    try (Fixture f = new Fixture(redis, "dropped-lag")) {
      Duration grace = Duration.ofMillis(1);
      try (ChaosAuditor auditor = f.auditor(grace)) {
        auditor.watch();
        Poll.until(auditor::watching);
        Thread.sleep(50); // the first snapshot now lies more than the grace back
        auditor.start();
        ObjectNode figures = f.afterChecks(auditor, 6);

        assertThat(figures.path("false_positives").asLong()).as("%s", figures).isPositive();
        assertThat(figures.path("false_positives_while_ingest_behind").asLong())
            .as("%s", figures)
            .isEqualTo(figures.path("false_positives").asLong());
        assertThat(figures.path("first_false_positive").asText())
            .startsWith("pod-0: the router said ")
            .endsWith(" blocks, the pod held 0 (its removal not yet applied)");
      }
    }
  }

  /**
   * The pod held the blocks for a moment between two looks (looks 300 ms apart on a loaded host;
   * none here but the first, made before, and those after each answer), the index applied their
   * stores and not yet their removals, and a router credits them within the grace: the pod held
   * them then, so no lookup is a false positive. From looks alone the auditor never saw them held,
   * and counted each lookup a false positive "(its removal applied)"; the engine's published
   * batches say when they were held.
   */
  @Test
  void check_blocksHeldOnlyBetweenTwoLooks_withinTheGrace_noFalsePositive(RedisStandalone redis)
      throws Exception {
    Duration grace = Duration.ofSeconds(3);
    try (Fixture f = new Fixture(redis, "held-between-looks", false)) {
      try (ChaosAuditor auditor = f.auditor(grace, Duration.ofHours(1))) {
        auditor.watch();
        Poll.until(auditor::watching);
        // the first look now lies more than the grace back: a block never seen is not let pass
        Thread.sleep(grace.toMillis() + 300);
        f.serveThenDrop();
        auditor.start();
        ObjectNode figures = f.afterChecks(auditor, 3);

        assertThat(figures.path("false_positives").asLong()).as("%s", figures).isZero();
      }
    }
  }

  /**
   * Two pods of 32 blocks; pod-0 served a request of 20 prompt blocks, whose stores the index
   * applied, then two other requests that evicted all of it; the index has not applied those
   * batches (their removals are on their way). A router answers over HTTP.
   */
  private static final class Fixture implements AutoCloseable {
    private static final BlockHasher HASHER =
        BlockHasher.create(HashAlgorithm.SHA256_CBOR, Stack.HASH_SEED, Workloads.BLOCK_SIZE);

    final Fleet fleet;
    final RedisConnector connector;
    final PrefixIndex index;
    final KvRouter router;
    final ScoringServer server;
    final InferenceRequest dropped = request(0);

    Fixture(RedisStandalone redis, String indexName) throws Exception {
      this(redis, indexName, true);
    }

    /**
     * @param serve whether pod-0 serves its requests now, or at {@link #serveThenDrop}
     */
    Fixture(RedisStandalone redis, String indexName, boolean serve) throws Exception {
      fleet = Fleet.start(DemoConfig.builder().pods(2).build(), 32, false);
      connector = RedisConnector.connect(redis.uri().toURI().toString());
      index =
          PrefixIndex.builder()
              .indexName(indexName)
              .lookupPolicy(RetryPolicy.defaults())
              .redis(connector)
              .build();
      if (serve) {
        serveThenDrop();
      }
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      router =
          KvRouter.builder()
              .redisUri(redis.uri().toURI().toString())
              .indexName(indexName)
              .model(Workloads.MODEL, Stack.modelKeys())
              .meterRegistry(registry)
              .build();
      server = ScoringServer.start(router, registry, new InetSocketAddress("127.0.0.1", 0), 2);
    }

    /**
     * pod-0 serves the first request, the index applies its stores, then two more requests evict
     * all of it, which the index does not apply.
     */
    void serveThenDrop() {
      fleet.pod("pod-0").submit(dropped);
      StreamId stream = StreamId.of(Workloads.MODEL, "pod-0");
      Lease lease = index.acquireLease(stream, "chaos-auditor-test", Duration.ofMinutes(1)).get();
      List<Long> chain = new ArrayList<>();
      for (long block : HASHER.blockHashes(dropped.allTokens())) {
        chain.add(block);
      }
      assertThat(fleet.held("pod-0")).containsAll(chain);
      index.apply(stream, KeyMode.ENGINE, 0, lease, Events.batch(Events.stored(chain, null, null)));
      index.heartbeat(Workloads.MODEL, "pod-0", Duration.ofMinutes(1));

      fleet.pod("pod-0").submit(request(1));
      fleet.pod("pod-0").submit(request(2));
      assertThat(fleet.held("pod-0"))
          .as("what the pod holds of the first prompt")
          .doesNotContainAnyElementsOf(chain);
      assertThat(index.watermark(stream).orElseThrow())
          .as("the index applied only the first batch")
          .isLessThan(fleet.pod("pod-0").nextSequence(0) - 1);
    }

    ChaosAuditor auditor(Duration grace) {
      return auditor(grace, Duration.ofMillis(50));
    }

    ChaosAuditor auditor(Duration grace, Duration lookEvery) {
      RouterClient routers =
          new RouterClient(List.of(URI.create("http://127.0.0.1:" + server.address().getPort())));
      return new ChaosAuditor(fleet, index, routers, List.of(dropped), grace, 11, lookEvery);
    }

    /** The auditor's figures once it has checked at least {@code lookups} answers. */
    ObjectNode afterChecks(ChaosAuditor auditor, int lookups) {
      ObjectNode figures = JSON.createObjectNode();
      Poll.until(
          () -> {
            figures.removeAll();
            auditor.writeTo(figures);
            return figures.path("lookups_checked").asLong() >= lookups;
          },
          Duration.ofSeconds(30));
      return figures;
    }

    private static InferenceRequest request(int r) {
      int[] prompt = new int[20 * Workloads.BLOCK_SIZE];
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = 1 + r * 100_000 + i;
      }
      return InferenceRequest.of(prompt, new int[] {7, 8, 9});
    }

    @Override
    public void close() throws Exception {
      server.close();
      router.close();
      index.close();
      connector.close();
      fleet.close();
    }
  }
}
