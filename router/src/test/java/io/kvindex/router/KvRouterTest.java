package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.KeyMode;
import io.kvindex.index.Tier;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@UsesRedis
class KvRouterTest {
  private static final String MODEL = "Qwen/Qwen3-8B";
  private static final ModelKeys KEYS = ModelKeys.engine("sha256_cbor", "42", 16);

  static int[] prompt(int tokens, int salt) {
    return IntStream.range(0, tokens).map(i -> (i * 7919 + salt) % 50_000).toArray();
  }

  static String uri(RedisStandalone redis) {
    return redis.uri().toURI().toString();
  }

  private static KvRouter router(RedisStandalone redis, String index) {
    return KvRouter.builder()
        .redisUri(uri(redis))
        .indexName(index)
        .model(MODEL, KEYS)
        .lookupBudget(Duration.ofSeconds(1))
        .build();
  }

  @Test
  void score_twoRoutersAgreeAndSeeAPurgeAtOnce(RedisStandalone redis) {
    String index = "agree";
    try (IndexFixture writer = new IndexFixture(uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter first = router(redis, index);
        KvRouter second = router(redis, index)) {
      int[] tokens = prompt(16 * 6 + 5, 1);
      long[] keys = first.blockKeys(MODEL, null, null, tokens);
      assertThat(keys).hasSize(6);
      writer.store(MODEL, "pod-a", java.util.Arrays.copyOf(keys, 4), null);
      writer.store(MODEL, "pod-b", java.util.Arrays.copyOf(keys, 2), "CPU");
      List<String> pods = List.of("pod-a", "pod-b", "pod-c");

      Scores a = first.score(MODEL, null, tokens, pods);
      Scores b = second.score(MODEL, null, tokens, pods);

      assertThat(a).isEqualTo(b);
      assertThat(a.outcome()).isEqualTo(Scores.Outcome.HIT);
      assertThat(a.queriedBlocks()).isEqualTo(6);
      assertThat(a.pod("pod-a").orElseThrow().depth()).isEqualTo(4);
      assertThat(a.matchedTokens(a.pod("pod-a").orElseThrow())).isEqualTo(64);
      assertThat(a.pod("pod-a").orElseThrow().gpuDepth()).isEqualTo(4);
      assertThat(a.pod("pod-b").orElseThrow().depth()).isEqualTo(2);
      assertThat(a.pod("pod-b").orElseThrow().gpuDepth()).isZero();
      assertThat(a.pod("pod-b").orElseThrow().gpuCpuDepth()).isEqualTo(2);
      assertThat(a.pod("pod-c").orElseThrow().depth()).isZero();
      assertThat(a.pods().get(0).pod()).isEqualTo("pod-a");

      writer.purge(MODEL, "pod-a");

      assertThat(first.score(MODEL, null, tokens, pods).pod("pod-a").orElseThrow().depth())
          .isZero();
      assertThat(second.score(MODEL, null, tokens, pods).pod("pod-a").orElseThrow().depth())
          .isZero();
      assertThat(second.score(MODEL, null, tokens, pods).pod("pod-b").orElseThrow().depth())
          .isEqualTo(2);
    }
  }

  @Test
  void scoreAsync_answersAsScoreDoes_andFailsTheFutureForBadInput(RedisStandalone redis)
      throws Exception {
    String index = "async";
    try (IndexFixture writer = new IndexFixture(uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index)) {
      int[] tokens = prompt(16 * 6 + 5, 3);
      long[] keys = router.blockKeys(MODEL, null, null, tokens);
      writer.store(MODEL, "pod-a", java.util.Arrays.copyOf(keys, 4), null);
      writer.store(MODEL, "pod-b", java.util.Arrays.copyOf(keys, 2), "CPU");
      List<String> pods = List.of("pod-c", "pod-b", "pod-a");

      Scores async =
          router.scoreAsync(ScoreRequest.ofTokens(MODEL, tokens, pods)).get(10, TimeUnit.SECONDS);

      assertThat(async).isEqualTo(router.score(MODEL, null, tokens, pods));
      assertThat(async.pods().get(0).pod()).isEqualTo("pod-a");
      assertThat(async.pod("pod-a").orElseThrow().depth()).isEqualTo(4);
      assertThat(
              router
                  .scoreAsync(ScoreRequest.ofTokens(MODEL, prompt(5, 3), pods))
                  .get(10, TimeUnit.SECONDS)
                  .outcome())
          .as("a prompt shorter than a block: a miss, nothing read")
          .isEqualTo(Scores.Outcome.MISS);
      assertThat(router.scoreAsync(ScoreRequest.ofTokens("other/model", tokens, pods)))
          .as("a model without keys fails the future, as score throws")
          .failsWithin(Duration.ofSeconds(10))
          .withThrowableOfType(java.util.concurrent.ExecutionException.class)
          .withCauseInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void score_tierWeightsComeFromTheBuilder(RedisStandalone redis) {
    String index = "weights";
    try (IndexFixture writer = new IndexFixture(uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter defaults = router(redis, index);
        KvRouter cheapCpu =
            KvRouter.builder()
                .redisUri(uri(redis))
                .indexName(index)
                .model(MODEL, KEYS)
                .tierWeight(Tier.CPU, 0.25)
                .lookupBudget(Duration.ofSeconds(1))
                .build()) {
      long[] keys = {5, 6};
      writer.store(MODEL, "pod-b", keys, "CPU");
      assertThat(defaults.score(MODEL, keys, List.of("pod-b")).pods().get(0).score())
          .isEqualTo(1.6, org.assertj.core.api.Assertions.within(1e-9));
      assertThat(cheapCpu.score(MODEL, keys, List.of("pod-b")).pods().get(0).score())
          .isEqualTo(0.5, org.assertj.core.api.Assertions.within(1e-9));
    }
  }

  @Test
  void score_blockKeysGivenDirectly(RedisStandalone redis) {
    String index = "direct";
    try (IndexFixture writer = new IndexFixture(uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index)) {
      long[] keys = {-1L, 42L, 7L};
      writer.store(MODEL, "pod-a", keys, null);
      Scores scores = router.score(MODEL, keys, List.of("pod-a"));
      assertThat(scores.pod("pod-a").orElseThrow().depth()).isEqualTo(3);
    }
  }

  @Test
  void score_promptShorterThanABlockIsAMiss(RedisStandalone redis) {
    try (KvRouter router = router(redis, "short")) {
      Scores scores = router.score(MODEL, null, prompt(15, 0), List.of("pod-a"));
      assertThat(scores.outcome()).isEqualTo(Scores.Outcome.MISS);
      assertThat(scores.queriedBlocks()).isZero();
      assertThat(scores.pod("pod-a").orElseThrow().depth()).isZero();
    }
  }

  @Test
  void livePods_listsThePodsTheIngestersKeepLive(RedisStandalone redis) {
    String index = "live";
    try (IndexFixture writer = new IndexFixture(uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index)) {
      // (another model: the index reuses a model's list for a second)
      assertThat(router.livePods("nobody-serves-this")).hasValue(List.of());
      writer.store(MODEL, "pod-a", new long[] {1, 2}, null);
      writer.store(MODEL, "pod-b", new long[] {1}, null);
      assertThat(router.livePods(MODEL).orElseThrow()).containsExactlyInAnyOrder("pod-a", "pod-b");
      Scores none = router.score(MODEL, new long[] {1, 2}, List.of());
      assertThat(none.pods()).isEmpty();
      assertThat(none.outcome()).isEqualTo(Scores.Outcome.MISS);
    }
  }

  @Test
  void score_unknownModelIsRejectedWithAClearMessage(RedisStandalone redis) {
    try (KvRouter router = router(redis, "unknown")) {
      assertThatThrownBy(() -> router.score("other", null, prompt(32, 0), List.of("pod-a")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("model 'other' has no key mode configured");
    }
  }

  /**
   * With default keys any model name is accepted, so a client sending a million distinct names must
   * not make the router keep something per name.
   */
  @ParameterizedTest
  @ValueSource(strings = {"token:16", "engine:sha256_cbor:42:16"})
  void blockKeys_distinctModelsUnderDefaultKeysKeepNothingPerModel(
      String defaultKeys, RedisStandalone redis) {
    ModelKeys keys = ModelKeys.parse(defaultKeys);
    int[] tokens = prompt(16 * 3, 4);
    try (KvRouter router =
            KvRouter.builder()
                .redisUri(uri(redis))
                .indexName("many-models")
                .model(MODEL, KEYS)
                .defaultModelKeys(keys)
                .build();
        KvRouter configured =
            KvRouter.builder()
                .redisUri(uri(redis))
                .indexName("many-models")
                .model("client-7", keys)
                .build()) {
      for (int i = 0; i < 20_000; i++) {
        router.blockKeys("client-" + i, null, null, tokens);
      }
      router.score("client-x", null, tokens, List.of("pod-a"));

      assertThat(((RedisKvRouter) router).keyers())
          .as("the configured model and the default")
          .isEqualTo(2);
      assertThat(router.blockKeys("client-7", "lora", null, tokens))
          .as("the default keys, as if the model were configured with them")
          .isEqualTo(configured.blockKeys("client-7", "lora", null, tokens));
      assertThat(router.blockKeys("client-7", null, null, tokens))
          .isEqualTo(configured.blockKeys("client-7", null, null, tokens));
    }
  }

  @Test
  void score_badRequestsAreRejected() {
    assertThatThrownBy(
            () -> new ScoreRequest(MODEL, null, null, new int[1], new long[1], List.of("a")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("exactly one of tokenIds and blockKeys");
    assertThatThrownBy(() -> ModelKeys.parse("engine:builtin:42:16"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown hash algorithm");
    assertThatThrownBy(() -> ModelKeys.parse("token"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("token:<blockSize>");
  }
}
