package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.HybridHit;
import io.kvindex.index.KeyMode;
import io.kvindex.index.PodMatch;
import io.kvindex.index.StreamId;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A router scores a hybrid model by the layout the ingesters recorded, with no setting of its own:
 * a pod whose sliding-window group lacks the window ending at the full-attention prefix is not a
 * hit, as vLLM would recompute the prompt there.
 */
@UsesRedis
class HybridScoringTest {
  private static final String MODEL = "org/gpt-oss";
  private static final int BLOCK = 16;
  private static final long[] KEYS = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  private static final CacheLayout GPT_OSS =
      new CacheLayout(
          List.of(
              new Group(0, "full_attention", BLOCK, 0), new Group(1, "sliding_window", BLOCK, 32)));

  @Test
  void score_hybridModel_isVllmsHitPerPod(RedisStandalone redis) {
    String uri = redis.uri().toURI().toString();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    try (IndexFixture fixture = new IndexFixture(uri, "hybrid", MODEL, KeyMode.ENGINE);
        KvRouter router = router(uri, meters)) {
      // Both pods hold the whole prompt in full attention; "warm" holds the window before block 9
      // (blocks 7 and 8, as the prompt less a token ends at block 9), "cold" only blocks 8-9.
      fixture.apply(StreamId.of(MODEL, "warm"), stores(0, 10, 0, 10));
      fixture.apply(StreamId.of(MODEL, "cold"), stores(0, 10, 8, 10));
      ScoreRequest request = ScoreRequest.ofBlockKeys(MODEL, KEYS, List.of("cold", "warm"));
      assertThat(router.score(request).pod("cold").orElseThrow().depth())
          .as("no layout recorded yet: the full-attention prefix")
          .isEqualTo(10);

      fixture.index().noteCacheLayoutAsync(MODEL, GPT_OSS).join();
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> router.score(request).pod("cold").orElseThrow().depth() == 0))
          .as("once the layout is read, vLLM's hit: the window at 144 tokens is missing")
          .isTrue();
      PodMatch warm = router.score(request).pod("warm").orElseThrow();
      assertThat(warm.depth()).as("capped at the prompt less one token: 9 blocks").isEqualTo(9);
      assertThat(warm.groupTokens()).containsEntry(0, 144).containsEntry(1, 144);
      assertThat(router.score(request).pods().get(0).pod()).isEqualTo("warm");
      assertThat(meters.counter("kvindex.router.lookup.unscorable").count()).isZero();

      // A layout this router cannot score is counted and scored by the prefix, as before.
      fixture
          .index()
          .noteCacheLayoutAsync(MODEL, GPT_OSS.with(new Group(2, "chunked_local_attention", 16, 0)))
          .join();
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> router.score(request).pod("cold").orElseThrow().depth() == 10))
          .isTrue();
      assertThat(meters.counter("kvindex.router.lookup.unscorable").count()).isPositive();
    }
  }

  @Test
  void score_engineWithDraftModel_dropsTheLastMatchedBlock(RedisStandalone redis) {
    String uri = redis.uri().toURI().toString();
    String single = "org/llama-eagle";
    ModelKeys keys = ModelKeys.engine("sha256", null, BLOCK);
    try (IndexFixture fixture = new IndexFixture(uri, "hybrid", MODEL, KeyMode.ENGINE);
        KvRouter router =
            KvRouter.builder()
                .redisUri(uri)
                .indexName("hybrid")
                .model(MODEL, keys.withEagle(HybridHit.Eagle.FULL_ATTENTION))
                .model(single, keys.withEagle(HybridHit.Eagle.FULL_ATTENTION))
                .lookupBudget(Duration.ofSeconds(1))
                .meterRegistry(new SimpleMeterRegistry())
                .build()) {
      // One group, no layout recorded: 10 blocks held, a 160-token prompt: vLLM hits 9 blocks
      // (the prompt less a token) and its draft drops one.
      fixture.store(single, "pod", KEYS, null);
      ScoreRequest oneGroup = ScoreRequest.ofBlockKeys(single, KEYS, List.of("pod"));
      assertThat(router.score(oneGroup).pod("pod").orElseThrow().depth()).isEqualTo(8);

      // gpt-oss: full attention drops to 128 tokens; the window ending there (blocks 6-7) is held.
      fixture.apply(StreamId.of(MODEL, "warm"), stores(0, 10, 0, 10));
      fixture.index().noteCacheLayoutAsync(MODEL, GPT_OSS).join();
      ScoreRequest request = ScoreRequest.ofBlockKeys(MODEL, KEYS, List.of("warm"));
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> router.score(request).pod("warm").orElseThrow().depth() == 8))
          .as("vLLM's hit with the draft: 144 tokens less the dropped block")
          .isTrue();
      assertThat(router.score(request).pod("warm").orElseThrow().groupTokens())
          .containsEntry(0, 128)
          .containsEntry(1, 128);
    }
  }

  /** Full-attention blocks [0, full) and sliding-window blocks [from, to), as an engine stores. */
  private static List<KvEvent> stores(int zero, int full, int from, int to) {
    List<KvEvent> events = new ArrayList<>();
    events.add(store(zero, full, 0, "full_attention", null));
    events.add(store(from, to, 1, "sliding_window", 32));
    return events;
  }

  private static BlockStored store(int from, int to, int group, String kind, Integer window) {
    List<Long> hashes = new ArrayList<>();
    for (int i = from; i < to; i++) {
      hashes.add(KEYS[i]);
    }
    return new BlockStored(
        hashes,
        from == 0 ? null : KEYS[from - 1],
        List.of(),
        BLOCK,
        null,
        null,
        null,
        null,
        group,
        kind,
        window);
  }

  private static KvRouter router(String uri, SimpleMeterRegistry meters) {
    return KvRouter.builder()
        .redisUri(uri)
        .indexName("hybrid")
        .model(MODEL, ModelKeys.engine("sha256", null, BLOCK))
        .lookupBudget(Duration.ofSeconds(1))
        .meterRegistry(meters)
        .build();
  }
}
