package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.IngestLag;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Poll;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The closed loop through a real router and Redis: observations metered (the signed histogram,
 * per-pod outcomes, the exact share), an over-predicted pod asked to be resynced once per interval
 * whichever router asks, an under-predicted one never.
 */
@UsesRedis
class ClosedLoopTest {
  private static final String MODEL = "m";
  private static final int BLOCK = 16;
  private static final int WINDOW = 8;

  private static KvRouter router(RedisStandalone redis, String index, PrometheusMeterRegistry r) {
    return KvRouter.builder()
        .redisUri(redis.uri().toURI().toString())
        .indexName(index)
        .model(MODEL, ModelKeys.engine("sha256_cbor", "42", BLOCK))
        .driftWindow(WINDOW)
        .driftThreshold(0.5)
        .resyncInterval(Duration.ofMinutes(1))
        .meterRegistry(r)
        .build();
  }

  /** predicted 10 blocks, the engine reported {@code cachedBlocks} of a 20-block prompt. */
  private static Observation observed(String pod, int cachedBlocks) {
    return new Observation(MODEL, pod, 10, 20 * BLOCK + 1, cachedBlocks * BLOCK);
  }

  private static double count(PrometheusMeterRegistry r, String meter, String tag, String value) {
    return r.find(meter).tag(tag, value).counters().stream().mapToDouble(c -> c.count()).sum();
  }

  @Test
  void observe_metersEveryRequestSigned(RedisStandalone redis) {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (KvRouter router = router(redis, "loop-metrics", registry)) {
      assertThat(router.observe(observed("pod-a", 10))).isZero();
      assertThat(router.observe(observed("pod-a", 7))).isEqualTo(3);
      assertThat(router.observe(observed("pod-b", 12))).isEqualTo(-2);

      assertThat(count(registry, "kvindex.router.predictions", "outcome", "exact")).isEqualTo(1);
      assertThat(
              registry
                  .find("kvindex.router.predictions")
                  .tags("pod", "pod-a", "outcome", "over")
                  .counter()
                  .count())
          .isEqualTo(1);
      assertThat(
              registry
                  .find("kvindex.router.predictions")
                  .tags("pod", "pod-b", "outcome", "under")
                  .counter()
                  .count())
          .isEqualTo(1);
      assertThat(registry.get("kvindex.router.prediction.exact.ratio").gauge().value())
          .isEqualTo(1.0 / 3);
      String scrape = registry.scrape();
      assertThat(scrape)
          .contains("kvindex_router_prediction_error_blocks_count 3")
          .contains("kvindex_router_prediction_error_blocks_sum 1")
          .contains("kvindex_router_prediction_error_blocks_bucket{le=\"-2.0\"} 1");
    }
  }

  @Test
  void observe_overPredictedPod_oneResyncRequestAcrossRouters(RedisStandalone redis) {
    String index = "loop-resync";
    PrometheusMeterRegistry first = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PrometheusMeterRegistry second = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter a = router(redis, index, first);
        KvRouter b = router(redis, index, second)) {
      for (int i = 0; i < WINDOW; i++) {
        a.observe(observed("pod-a", 4));
        b.observe(observed("pod-a", 4));
      }
      Poll.until(
          () ->
              count(first, "kvindex.router.resync.requests", "outcome", "requested")
                      + count(second, "kvindex.router.resync.requests", "outcome", "requested")
                      + count(first, "kvindex.router.resync.requests", "outcome", "standing")
                      + count(second, "kvindex.router.resync.requests", "outcome", "standing")
                  == 2);

      assertThat(
              count(first, "kvindex.router.resync.requests", "outcome", "requested")
                  + count(second, "kvindex.router.resync.requests", "outcome", "requested"))
          .as("one request stands per pod per interval, whichever router asks")
          .isEqualTo(1);
      assertThat(count(first, "kvindex.router.drift.suspects", "direction", "over")).isEqualTo(1);
      assertThat(ingester.index().takeResync(StreamId.of(MODEL, "pod-a"), Duration.ofMillis(1)))
          .hasValueSatisfying(note -> assertThat(note).contains("over-predicted in 8 of"));
      assertThat(ingester.index().takeResync(StreamId.of(MODEL, "pod-a"), Duration.ofMillis(1)))
          .isEmpty();
    }
  }

  /**
   * A pod whose stream reports it is far behind its engine is over-predicted because its stream has
   * not applied the engine's removals yet, not because the index drifted: its observations are not
   * judged (no suspect, no resync). Once it keeps up, the same errors make it suspect.
   */
  @Test
  void observe_podWhoseStreamLags_notJudgedUntilItKeepsUp(RedisStandalone redis) {
    String index = "loop-lag";
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index, registry)) {
      StreamId stream = StreamId.of(MODEL, "pod-l");
      ingester.index().reportLagAsync(stream, Duration.ofSeconds(20), Duration.ofMinutes(1)).join();
      Poll.until(() -> ((RedisKvRouter) router).lagging(MODEL, "pod-l"));

      for (int i = 0; i < 2 * WINDOW; i++) {
        router.observe(observed("pod-l", 4));
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "over")).isZero();
      assertThat(count(registry, "kvindex.router.drift.unjudged", "reason", "lag"))
          .isEqualTo(2 * WINDOW);
      assertThat(ingester.index().takeResync(stream, Duration.ofMillis(1))).isEmpty();

      Poll.until(
          () -> {
            ingester.index().reportLagAsync(stream, Duration.ZERO, Duration.ofMinutes(1)).join();
            router.observe(observed("pod-l", 4));
            return count(registry, "kvindex.router.drift.suspects", "direction", "over") == 1;
          });
    }
  }

  /**
   * Predictions that rested on speculative routes and proved too high are not judged: the excess
   * may be the routes' alone (the index's own entries are not in question), so the pod is not
   * resynced. Too low is still judged, and so are the same errors on the entries alone.
   */
  @Test
  void observe_overPredictedOnSpeculativeRoutes_notJudged(RedisStandalone redis) {
    String index = "loop-speculative";
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index, registry)) {
      Observation overOnRoutes =
          new Observation(MODEL, "pod-s", 10, 20 * BLOCK + 1, 4 * BLOCK, null, -1, true);
      for (int i = 0; i < 2 * WINDOW; i++) {
        assertThat(router.observe(overOnRoutes)).isEqualTo(6);
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "over")).isZero();
      assertThat(count(registry, "kvindex.router.drift.unjudged", "reason", "speculative"))
          .isEqualTo(2 * WINDOW);
      assertThat(count(registry, "kvindex.router.predictions", "outcome", "over"))
          .as("still metered")
          .isEqualTo(2 * WINDOW);
      assertThat(ingester.index().takeResync(StreamId.of(MODEL, "pod-s"), Duration.ofMillis(1)))
          .isEmpty();

      Observation underOnRoutes =
          new Observation(MODEL, "pod-u", 10, 20 * BLOCK + 1, 14 * BLOCK, null, -1, true);
      for (int i = 0; i < WINDOW; i++) {
        router.observe(underOnRoutes);
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "under"))
          .isEqualTo(1);

      for (int i = 0; i < WINDOW; i++) {
        router.observe(observed("pod-s", 4));
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "over"))
          .as("the same error on the entries alone")
          .isEqualTo(1);
    }
  }

  @Test
  void behind_aStreamFarBehind_orNotReportingLately_butNotOneGoneLongAgo() {
    Duration now = Duration.ZERO;
    assertThat(ClosedLoop.behind(List.of())).as("no report: nothing known").isFalse();
    assertThat(ClosedLoop.behind(List.of(new IngestLag(0, Duration.ofMillis(300), now)))).isFalse();
    assertThat(
            ClosedLoop.behind(
                List.of(
                    new IngestLag(0, Duration.ZERO, now),
                    new IngestLag(1, Duration.ofSeconds(2), now))))
        .as("one rank far behind")
        .isTrue();
    assertThat(ClosedLoop.behind(List.of(new IngestLag(0, Duration.ZERO, Duration.ofSeconds(5)))))
        .as("an owner that does not report")
        .isTrue();
    assertThat(ClosedLoop.behind(List.of(new IngestLag(0, Duration.ZERO, Duration.ofMinutes(1)))))
        .as("a report no one owns now")
        .isFalse();
  }

  @Test
  void observe_underPredictedPod_reportedNeverResynced(RedisStandalone redis) {
    String index = "loop-under";
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index, registry)) {
      for (int i = 0; i < WINDOW; i++) {
        router.observe(observed("pod-b", 15));
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "under"))
          .isEqualTo(1);
      assertThat(count(registry, "kvindex.router.resync.requests", "outcome", "requested"))
          .isZero();
      assertThat(ingester.index().takeResync(StreamId.of(MODEL, "pod-b"), Duration.ofMillis(1)))
          .isEmpty();
    }
  }

  /**
   * An observation of a pod whose evictions the index infers is recorded for the pod's owners with
   * the prompt's blocks and the error; a pod whose evictions are not inferred records none.
   */
  @Test
  void observe_podWhoseEvictionsAreInferred_recordsItsBlocksAndTheError(RedisStandalone redis) {
    String index = "loop-touches";
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter router = router(redis, index, registry)) {
      assertThat(ingester.index().markEvictionsInferred(MODEL, "pod-a", 512, Duration.ofMinutes(1)))
          .isTrue();
      long[] keys = {11, 12, 13};
      Observation withKeys = new Observation(MODEL, "pod-a", 3, 3 * BLOCK + 1, BLOCK, keys, 0);
      Observation other = new Observation(MODEL, "pod-b", 3, 3 * BLOCK + 1, BLOCK, keys, 0);
      String cursor = ingester.index().touches(StreamId.of(MODEL, "pod-a"), null, 1).cursor();
      Poll.until(() -> router.needsBlockKeys(MODEL, "pod-a"));
      assertThat(router.needsBlockKeys(MODEL, "pod-b")).isFalse();

      router.observe(withKeys);
      router.observe(other);
      router.observe(new Observation(MODEL, "pod-a", 3, 3 * BLOCK + 1, BLOCK));
      Poll.until(() -> count(registry, "kvindex.router.touches", "outcome", "recorded") == 1);

      Touches read = ingester.index().touches(StreamId.of(MODEL, "pod-a"), cursor, 10);
      assertThat(read.touches()).hasSize(1);
      assertThat(read.touches().get(0).blockKeys()).containsExactly(11, 12, 13);
      assertThat(read.touches().get(0).errorBlocks()).isEqualTo(2);
      assertThat(ingester.index().touches(StreamId.of(MODEL, "pod-b"), "0-0", 10).touches())
          .isEmpty();
    }
  }

  /**
   * By default a suspect pod of an engine-keyed model is resynced (its ingester infers the engine's
   * evictions); one of a token-keyed model is reported only: its ingester could only purge it,
   * which loses its hottest prefixes.
   */
  @Test
  void observe_defaultRouter_engineKeyedSuspectResynced_tokenKeyedReportedOnly(
      RedisStandalone redis) {
    String index = "loop-default";
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (IndexFixture ingester =
            new IndexFixture(redis.uri().toURI().toString(), index, MODEL, KeyMode.ENGINE);
        KvRouter router =
            KvRouter.builder()
                .redisUri(redis.uri().toURI().toString())
                .indexName(index)
                .model(MODEL, ModelKeys.engine("sha256_cbor", "42", BLOCK))
                .model("t", ModelKeys.token(BLOCK))
                .meterRegistry(registry)
                .build()) {
      for (int i = 0; i < KvRouterBuilder.DEFAULT_DRIFT_WINDOW; i++) {
        router.observe(observed("pod-c", 4));
        router.observe(new Observation("t", "pod-t", 10, 20 * BLOCK + 1, 4 * BLOCK));
      }
      assertThat(count(registry, "kvindex.router.drift.suspects", "direction", "over"))
          .isEqualTo(2);
      Poll.until(
          () -> count(registry, "kvindex.router.resync.requests", "outcome", "requested") == 1);
      assertThat(count(registry, "kvindex.router.resync.requests", "outcome", "off")).isEqualTo(1);
      assertThat(ingester.index().takeResync(StreamId.of(MODEL, "pod-c"), Duration.ofMillis(1)))
          .isPresent();
      assertThat(ingester.index().takeResync(StreamId.of("t", "pod-t"), Duration.ofMillis(1)))
          .isEmpty();
    }
  }
}
