package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.KeyMode;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A router told the wrong keys finds nothing on a pod of today's vLLM (sha256, no seed); with
 * {@code adoptEngineKeys} it takes the form the ingester's key check found, and finds the blocks.
 */
@UsesRedis
class AdoptEngineKeysTest {
  private static final String MODEL = "org/adopt";
  private static final int BLOCK = 16;
  private static final ModelKeys TOLD = ModelKeys.engine("sha256_cbor", null, BLOCK);

  @Test
  void score_adoptEngineKeys_keysAsTheEnginesHash(RedisStandalone redis) {
    String uri = redis.uri().toURI().toString();
    String index = "adopt";
    int[] prompt = IntStream.range(0, BLOCK * 7 + 3).map(i -> (i * 31 + 5) % 40_000).toArray();
    try (SimulatedPod pod =
            SimulatedPod.start(
                PodConfig.builder()
                    .name("sim-0")
                    .model(MODEL)
                    .blockSize(BLOCK)
                    .capacityBlocks(64)
                    .hashAlgorithm(HashAlgorithm.SHA256)
                    .hashSeed(null)
                    .http(false)
                    .build());
        Ingester ingester = Ingester.start(ingesterConfig(uri, index, pod));
        IndexFixture fixture = new IndexFixture(uri, index, MODEL, KeyMode.ENGINE)) {
      pod.submit(InferenceRequest.of(prompt, new int[] {1, 2}));
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> fixture.index().keyCheckAsync(MODEL).join().isPresent()))
          .as("the ingester's key check noted what the engines use")
          .isTrue();
      assertThat(fixture.index().keyCheckAsync(MODEL).join().orElseThrow().engines())
          .isEqualTo("engine:sha256:16");
      // the layout is noted by a write of its own, not ordered with the key check's
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> fixture.index().cacheLayoutAsync(MODEL).join().isPresent()))
          .as("the ingester noted the model's cache layout")
          .isTrue();
      assertThat(fixture.index().cacheLayoutAsync(MODEL).join().map(CacheLayout::encode))
          .as("the ingester recorded the model's one cache group from the engine's stores")
          .contains("0:full_attention:16:0");
      try (KvRouter told = router(uri, index, false);
          KvRouter adopting = router(uri, index, true)) {
        ScoreRequest request = ScoreRequest.ofTokens(MODEL, prompt, List.of("sim-0"));
        assertThat(
                UnavailableIndexTest.eventually(
                    () -> adopting.score(request).pod("sim-0").orElseThrow().depth() == 7))
            .as("the adopting router keys as the engines hash and finds the 7 full blocks")
            .isTrue();
        assertThat(told.score(request).pod("sim-0").orElseThrow().depth())
            .as("a router that keeps its configured keys finds nothing")
            .isZero();
      }
    }
  }

  private static KvRouter router(String uri, String index, boolean adopt) {
    return KvRouter.builder()
        .redisUri(uri)
        .indexName(index)
        .model(MODEL, TOLD)
        .adoptEngineKeys(adopt)
        .lookupBudget(Duration.ofSeconds(1))
        .build();
  }

  private static IngesterConfig ingesterConfig(String uri, String index, SimulatedPod pod) {
    StreamEndpoints e = pod.endpoints().get(0);
    return IngesterConfig.builder()
        .redisUri(uri)
        .indexName(index)
        .replicaId("adopt")
        .httpPort(-1)
        .leaseTtl(Duration.ofMillis(1500))
        .reconcileInterval(Duration.ofMillis(200))
        .idleCatchUp(Duration.ofMillis(300))
        .replayIdleTimeout(Duration.ofMillis(500))
        .keyCheckInterval(Duration.ofMillis(1))
        .pod(
            new PodSpec(
                pod.name(),
                MODEL,
                e.publish(),
                !e.publishBound(),
                e.replay(),
                null,
                List.of(0),
                PodSpec.keyMode("engine"),
                e.topic()))
        .build();
  }
}
