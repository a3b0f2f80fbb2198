package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.HybridHit.Eagle;
import io.kvindex.index.KeyMode;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** When a router reads a model's cache-group layout again, on its own (simulated) clock. */
@UsesRedis
class ModelLayoutsTest {
  private static final String MODEL = "org/gpt-oss";
  private static final CacheLayout GPT_OSS =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 16, 128)));

  /**
   * Asked before any layout is recorded (a fleet starting: the engines' first stores still on their
   * way), the router reads it again well within its usual period, rather than scoring a hybrid
   * model by its full-attention prefix for all of it.
   */
  @Test
  void scoring_noLayoutRecordedYet_readsAgainSoon(RedisStandalone redis)
      throws InterruptedException {
    String uri = redis.uri().toURI().toString();
    AtomicLong clock = new AtomicLong();
    try (IndexFixture fixture = new IndexFixture(uri, "layouts", MODEL, KeyMode.ENGINE)) {
      ModelLayouts layouts =
          new ModelLayouts(fixture.index(), clock::get, new SimpleMeterRegistry());
      assertThat(layouts.scoring(MODEL, 16, Eagle.OFF).rule()).isNull();
      Thread.sleep(200); // the first read, which finds none, is answered meanwhile

      fixture.index().noteCacheLayoutAsync(MODEL, GPT_OSS).join();
      clock.addAndGet(Duration.ofSeconds(1).toNanos());

      assertThat(
              UnavailableIndexTest.eventually(
                  () -> layouts.scoring(MODEL, 16, Eagle.OFF).rule() != null))
          .as("read again a second after the first read found none")
          .isTrue();
    }
  }

  /** Once a layout is recorded, it is read again only every period. */
  @Test
  void scoring_layoutRecorded_readsAgainEveryPeriod(RedisStandalone redis) {
    String uri = redis.uri().toURI().toString();
    AtomicLong clock = new AtomicLong();
    try (IndexFixture fixture = new IndexFixture(uri, "layouts", MODEL, KeyMode.ENGINE)) {
      fixture.index().noteCacheLayoutAsync(MODEL, GPT_OSS).join();
      ModelLayouts layouts =
          new ModelLayouts(fixture.index(), clock::get, new SimpleMeterRegistry());
      layouts.scoring(MODEL, 16, Eagle.OFF);
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> layouts.scoring(MODEL, 16, Eagle.OFF).rule() != null))
          .isTrue();

      fixture
          .index()
          .noteCacheLayoutAsync(MODEL, new CacheLayout(List.of(GPT_OSS.groups().get(0))));
      clock.addAndGet(ModelLayouts.CHECK_EVERY.toNanos());
      assertThat(
              UnavailableIndexTest.eventually(
                  () -> layouts.scoring(MODEL, 16, Eagle.OFF).rule() == null))
          .as("the redeployed model's one group, read after the period")
          .isTrue();
    }
  }
}
