package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

@UsesRedis
class UnavailableIndexTest {
  private static final String MODEL = "m";

  @Test
  void score_pausedRedisAnswersUnavailableWithinTheBudget(@Fresh RedisStandalone redis) {
    Duration budget = Duration.ofMillis(20);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (IndexFixture writer =
            new IndexFixture(KvRouterTest.uri(redis), "paused", MODEL, KeyMode.TOKEN);
        KvRouter router =
            KvRouter.builder()
                .redisUri(KvRouterTest.uri(redis))
                .indexName("paused")
                .model(MODEL, ModelKeys.token(16))
                .lookupBudget(budget)
                .meterRegistry(registry)
                .build()) {
      int[] tokens = KvRouterTest.prompt(64, 3);
      writer.storeTokens(MODEL, "pod-a", null, tokens, 4, 16);
      // a 20 ms budget on a loaded machine: the first lookups may run over it before Redis pauses
      assertThat(
              eventually(
                  () ->
                      router.score(MODEL, null, tokens, List.of("pod-a")).outcome()
                          == Scores.Outcome.HIT))
          .as("the router answers from the index before Redis pauses")
          .isTrue();
      double before = registry.get("kvindex.router.unavailable").counter().count();

      redis.node().pause();
      try {
        for (int i = 0; i < 3; i++) {
          Scores scores = router.score(MODEL, null, tokens, List.of("pod-a"));

          assertThat(scores.indexAvailable()).isFalse();
          assertThat(scores.pods()).isEmpty();
        }
        assertThat(registry.get("kvindex.router.unavailable").counter().count() - before)
            .isEqualTo(3.0);
        // The lookup budget ended each lookup ("deadline"), not the 2 s command timeout.
        assertThat(
                registry
                    .find("kvindex.redis.swallowed")
                    .tag("reason", "deadline")
                    .counters()
                    .stream()
                    .mapToDouble(c -> c.count())
                    .sum())
            .isGreaterThanOrEqualTo(3.0);
        Pick pick =
            router.pick(
                router.score(MODEL, null, tokens, List.of("pod-a", "pod-b")),
                List.of("pod-a", "pod-b"),
                pod -> pod.equals("pod-a") ? 5 : 1);
        assertThat(pick.reason()).isEqualTo(Pick.Reason.INDEX_UNAVAILABLE);
        assertThat(pick.pod()).isEqualTo("pod-b");
      } finally {
        redis.node().resume();
      }
      assertThat(
              eventually(
                  () -> router.score(MODEL, null, tokens, List.of("pod-a")).indexAvailable()))
          .isTrue();
    }
  }

  /**
   * Polls {@code condition} every 20 ms until it holds or 10 s pass. Polling without a pause made
   * each poll a Redis call in a tight loop, which on a loaded two-core machine starved the very
   * Redis and ingester the condition waits for (a call timed out after 2 s).
   */
  static boolean eventually(java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return condition.getAsBoolean();
  }
}
