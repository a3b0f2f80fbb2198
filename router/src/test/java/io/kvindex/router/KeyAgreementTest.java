package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.simulator.HashMode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The keys the router computes equal the keys the ingester writes: a simulated vLLM pod serves a
 * request (LoRA adapter and cache salt included), a real ingester indexes its events, and the
 * router, given only the prompt's token ids, finds every full block on that pod.
 */
@UsesRedis
class KeyAgreementTest {
  private static final String MODEL = "org/agreement";
  private static final int BLOCK = 16;
  private static final String SEED = "1234";

  enum Mode {
    ENGINE(HashMode.ENGINE, SEED, "engine", ModelKeys.engine("sha256_cbor", SEED, BLOCK)),
    /** vLLM with no hashing flags: sha256 over pickle, PYTHONHASHSEED unset. */
    ENGINE_VLLM_DEFAULTS(HashMode.ENGINE, null, "engine", ModelKeys.parse("engine:sha256:16")),
    TOKEN(HashMode.RANDOM, SEED, "token", ModelKeys.token(BLOCK));

    final HashMode simulator;
    final String simulatorSeed;
    final String ingester;
    final ModelKeys router;

    Mode(HashMode simulator, String simulatorSeed, String ingester, ModelKeys router) {
      this.simulator = simulator;
      this.simulatorSeed = simulatorSeed;
      this.ingester = ingester;
      this.router = router;
    }
  }

  @ParameterizedTest
  @EnumSource(Mode.class)
  void blockKeys_equalWhatTheIngesterIndexed(Mode mode, RedisStandalone redis) {
    String uri = KvRouterTest.uri(redis);
    String index = "agree-" + mode.name().toLowerCase(java.util.Locale.ROOT);
    int[] prompt = KvRouterTest.prompt(BLOCK * 7 + 3, 17);
    try (SimulatedPod pod =
            SimulatedPod.start(
                PodConfig.builder()
                    .name("sim-0")
                    .model(MODEL)
                    .blockSize(BLOCK)
                    .capacityBlocks(64)
                    .hashMode(mode.simulator)
                    .hashAlgorithm(
                        mode.router.hashAlgorithm() == null
                            ? HashAlgorithm.SHA256_CBOR
                            : mode.router.hashAlgorithm())
                    .hashSeed(mode.simulatorSeed)
                    .http(false)
                    .build());
        Ingester ingester = Ingester.start(ingesterConfig(uri, index, pod, mode));
        KvRouter router =
            KvRouter.builder()
                .redisUri(uri)
                .indexName(index)
                .model(MODEL, mode.router)
                .lookupBudget(Duration.ofSeconds(1))
                .build()) {
      pod.submit(new InferenceRequest(prompt, new int[] {1, 2}, "adapter-x", "salt-y"));
      ScoreRequest request =
          ScoreRequest.ofTokens(MODEL, prompt, List.of("sim-0", "sim-1"))
              .withLora("adapter-x")
              .withCacheSalt("salt-y");

      assertThat(
              UnavailableIndexTest.eventually(
                  () -> router.score(request).pod("sim-0").orElseThrow().depth() == 7))
          .as("the router finds the 7 full prompt blocks the ingester indexed")
          .isTrue();
      assertThat(router.score(request).pod("sim-1").orElseThrow().depth()).isZero();
      if (mode != Mode.TOKEN) {
        long[] keys = router.blockKeys(MODEL, "adapter-x", "salt-y", prompt);
        assertThat(pod.cachedBlocks(0, "GPU"))
            .containsAll(Arrays.stream(keys).boxed().collect(Collectors.toList()));
      }
      ScoreRequest withoutLora = ScoreRequest.ofTokens(MODEL, prompt, List.of("sim-0"));
      assertThat(router.score(withoutLora).pod("sim-0").orElseThrow().depth())
          .as("another LoRA adapter's blocks are other blocks")
          .isZero();
    }
  }

  private static IngesterConfig ingesterConfig(
      String uri, String index, SimulatedPod pod, Mode mode) {
    StreamEndpoints e = pod.endpoints().get(0);
    return IngesterConfig.builder()
        .redisUri(uri)
        .indexName(index)
        .replicaId("agreement")
        .httpPort(-1)
        .leaseTtl(Duration.ofMillis(1500))
        .reconcileInterval(Duration.ofMillis(200))
        // a batch published before the subscription connected is replayed on the next catch-up
        .idleCatchUp(Duration.ofMillis(300))
        .replayIdleTimeout(Duration.ofMillis(500))
        .pod(
            new PodSpec(
                pod.name(),
                MODEL,
                e.publish(),
                !e.publishBound(),
                e.replay(),
                null,
                List.of(0),
                PodSpec.keyMode(mode.ingester),
                e.topic()))
        .build();
  }
}
