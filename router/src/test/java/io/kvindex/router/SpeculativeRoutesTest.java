package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.index.PodMatch;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

@UsesRedis
class SpeculativeRoutesTest {
  private static final String MODEL = "m";
  private static final List<String> PODS = List.of("pod-a", "pod-b");

  private static KvRouter router(RedisStandalone redis) {
    return KvRouter.builder()
        .redisUri(KvRouterTest.uri(redis))
        .indexName("spec")
        .model(MODEL, ModelKeys.engine("sha256_cbor", "7", 16))
        .lookupBudget(Duration.ofSeconds(1))
        .build();
  }

  @Test
  void recordRoute_expiresInRedisEvenAfterTheRouterIsGone(RedisStandalone redis) {
    int[] tokens = KvRouterTest.prompt(16 * 4, 5);
    long[] keys;
    try (IndexFixture engine =
            new IndexFixture(KvRouterTest.uri(redis), "spec", MODEL, KeyMode.ENGINE);
        KvRouter recorder = router(redis)) {
      live(engine, "pod-b");
      keys = recorder.blockKeys(MODEL, null, null, tokens);
      assertThat(recorder.recordRoute(MODEL, "pod-b", keys, Duration.ofMillis(500)).join())
          .isTrue();
    }
    try (KvRouter reader = router(redis);
        RedisClient client = RedisClient.create(redis.uri());
        StatefulRedisConnection<String, String> raw = client.connect()) {
      PodMatch b = reader.score(MODEL, null, tokens, PODS).pod("pod-b").orElseThrow();
      assertThat(b.depth()).isEqualTo(4);
      assertThat(b.gpuDepth()).isEqualTo(4);
      assertThat(b.speculative()).isTrue();
      // the group's routes and their order, both expiring with the route (beside them, the
      // routers' notes of their keys, spec:models, which stays)
      assertThat(routes(raw)).hasSize(2);
      for (String key : routes(raw)) {
        assertThat(raw.sync().pttl(key)).as(key).isBetween(1L, 500L);
      }

      assertThat(
              UnavailableIndexTest.eventually(
                  () ->
                      routes(raw).isEmpty()
                          && reader
                                  .score(MODEL, null, tokens, PODS)
                                  .pod("pod-b")
                                  .orElseThrow()
                                  .depth()
                              == 0))
          .isTrue();
    }
  }

  /** Routes are recorded for live pods only. */
  @Test
  void recordRoute_podWithoutLiveRecord_notRecorded(RedisStandalone redis) {
    int[] tokens = KvRouterTest.prompt(16 * 3, 13);
    try (IndexFixture engine =
            new IndexFixture(KvRouterTest.uri(redis), "spec", MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis);
        RedisClient client = RedisClient.create(redis.uri());
        StatefulRedisConnection<String, String> raw = client.connect()) {
      long[] keys = router.blockKeys(MODEL, null, null, tokens);
      assertThat(router.recordRoute(MODEL, "made-up", keys, Duration.ofMinutes(1)).join())
          .isFalse();
      assertThat(routes(raw)).isEmpty();
    }
  }

  private static void live(IndexFixture engine, String pod) {
    assertThat(engine.index().heartbeat(MODEL, pod, Duration.ofMinutes(5))).isTrue();
  }

  /** The speculative keys: every spec: key but the routers' notes. */
  private static java.util.List<String> routes(StatefulRedisConnection<String, String> raw) {
    return raw.sync().keys("*:spec:*").stream().filter(k -> !k.endsWith(":spec:models")).toList();
  }

  @Test
  void recordRoute_confirmedEntriesSupersedeSpeculativeOnes(RedisStandalone redis) {
    int[] tokens = KvRouterTest.prompt(16 * 6, 8);
    try (IndexFixture engine =
            new IndexFixture(KvRouterTest.uri(redis), "spec", MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis)) {
      long[] keys = router.blockKeys(MODEL, null, null, tokens);
      engine.store(MODEL, "pod-a", Arrays.copyOf(keys, 2), null);
      router.recordRoute(MODEL, "pod-a", Arrays.copyOf(keys, 4), Duration.ofMinutes(1)).join();

      PodMatch partly = router.score(MODEL, null, tokens, PODS).pod("pod-a").orElseThrow();
      assertThat(partly.depth()).isEqualTo(4);
      assertThat(partly.speculative()).isTrue();
      assertThat(partly.rankDepths()).containsEntry(0, 4);

      engine.store(MODEL, "pod-a", Arrays.copyOf(keys, 4), null);
      PodMatch confirmed = router.score(MODEL, null, tokens, PODS).pod("pod-a").orElseThrow();
      assertThat(confirmed.depth()).isEqualTo(4);
      assertThat(confirmed.speculative()).isFalse();

      engine.store(MODEL, "pod-a", keys, "CPU");
      PodMatch longer = router.score(MODEL, null, tokens, PODS).pod("pod-a").orElseThrow();
      assertThat(longer.depth()).isEqualTo(6);
      assertThat(longer.speculative()).isFalse();
      assertThat(router.score(MODEL, null, tokens, PODS).pod("pod-b").orElseThrow().depth())
          .isZero();
    }
  }

  @Test
  void pick_prefersTheSpeculativeRouteOfTheSamePrompt(RedisStandalone redis) {
    // Long enough that its cached prefix outweighs a unit of load under the default policy.
    int[] tokens = KvRouterTest.prompt(16 * 64, 11);
    try (IndexFixture engine =
            new IndexFixture(KvRouterTest.uri(redis), "spec", MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis)) {
      PODS.forEach(pod -> live(engine, pod));
      long[] keys = router.blockKeys(MODEL, null, null, tokens);
      Scores cold = router.score(MODEL, null, tokens, PODS);
      Pick first = router.pick(cold, PODS, LoadSignal.none());
      router.recordRoute(MODEL, first.pod(), keys, Duration.ofMinutes(1)).join();

      String other = first.pod().equals("pod-a") ? "pod-b" : "pod-a";
      Pick second =
          router.pick(
              router.score(MODEL, null, tokens, PODS), PODS, pod -> pod.equals(other) ? 0 : 1);
      assertThat(second.pod()).isEqualTo(first.pod());
      assertThat(second.reason()).isEqualTo(Pick.Reason.LONGEST_PREFIX);
      assertThat(second.speculative()).isTrue();
    }
  }
}
