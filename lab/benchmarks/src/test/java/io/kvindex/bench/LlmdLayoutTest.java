package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.StreamId;
import io.kvindex.localredis.LocalRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The llm-d layout behaves as its design says, on a real Redis. */
class LlmdLayoutTest {
  private static final int DATABASE = 2;
  private static LocalRedis redis;
  private static RedisClient client;
  private static StatefulRedisConnection<String, String> admin;
  private LlmdLayout layout;

  @BeforeAll
  static void startRedis() {
    redis = LocalRedis.start();
    client = RedisClient.create(redis.uri().toString() + "/" + DATABASE);
    admin = client.connect();
  }

  @AfterAll
  static void stopRedis() {
    admin.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    redis.close();
  }

  @BeforeEach
  void open() {
    admin.sync().flushdb();
    layout = new LlmdLayout(redis.uri().toString(), DATABASE);
  }

  @AfterEach
  void close() {
    layout.close();
  }

  @Test
  void store_writesOneHashPerBlockAndOneEngineZsetEach() {
    long[] chain = {7, -1};
    layout.store(List.of(feed("pod-a", chain, 0, 2)));

    assertThat(admin.sync().hgetall("7"))
        .containsExactly(
            java.util.Map.entry("{\"PodIdentifier\":\"pod-a\",\"DeviceTier\":\"gpu\"}", ""));
    assertThat(admin.sync().hkeys(Long.toUnsignedString(-1))).hasSize(1);
    assertThat(admin.sync().zrange("engine:7", 0, -1)).containsExactly("7");
    assertThat(admin.sync().dbsize()).isEqualTo(4);
  }

  @Test
  void lookup_stopsAtTheFirstKeyWithNoCandidate() {
    long[] chain = {10, 11, 12, 13, 14, 15};
    layout.store(List.of(feed("pod-a", chain, 0, 3), feed("pod-a", chain, 4, 6)));
    layout.store(List.of(feed("pod-b", chain, 0, 6)));

    assertThat(layout.lookup(chain, List.of("pod-a")))
        .containsExactly(List.of("pod-a"), List.of("pod-a"), List.of("pod-a"));
    assertThat(layout.depths(chain, List.of("pod-a", "pod-b"))).containsExactly(3, 6);
    assertThat(layout.lookup(new long[] {99, 10}, List.of("pod-a", "pod-b"))).isEmpty();
  }

  @Test
  void remove_deletesTheEntryThenTheEmptyHashAndEngineKey() {
    long[] chain = {20, 21, 22};
    layout.store(List.of(feed("pod-a", chain, 0, 3), feed("pod-b", chain, 0, 3)));

    layout.remove("pod-a", "gpu", 21);
    assertThat(layout.depths(chain, List.of("pod-a", "pod-b"))).containsExactly(1, 3);
    assertThat(admin.sync().exists("21", "engine:21")).isEqualTo(2);

    layout.remove("pod-b", "GPU", 21);
    assertThat(admin.sync().exists("21", "engine:21")).isZero();
  }

  @Test
  void clear_removesOnlyThatPodsFieldsAndIsVisiblePartWay() {
    long[] chain = LookupFixture.randomChain(new Random(3), 3_000);
    layout.store(List.of(feed("pod-a", chain, 0, chain.length), feed("pod-b", chain, 0, 10)));
    List<Integer> heldAfterEachPage = new ArrayList<>();
    AtomicInteger pages = new AtomicInteger();

    layout.clear(
        "pod-a",
        () -> {
          if (pages.getAndIncrement() == 0) {
            heldAfterEachPage.add(held(chain, "pod-a"));
          }
        });

    assertThat(pages.get()).isGreaterThan(1);
    assertThat(heldAfterEachPage.get(0))
        .as("blocks still listing pod-a after the first SCAN page")
        .isStrictlyBetween(0, chain.length);
    assertThat(held(chain, "pod-a")).isZero();
    assertThat(layout.depths(chain, List.of("pod-b"))).containsExactly(10);
    assertThat(admin.sync().exists(Long.toUnsignedString(chain[20]))).isZero();
  }

  @Test
  void podField_roundTripsAnEscapedIdentifier() {
    byte[] field = PodField.encode("pod \"q\"", "gpu");
    assertThat(PodField.identifierEquals(field, "pod \"q\"".getBytes(StandardCharsets.UTF_8)))
        .isTrue();
    assertThat(PodField.identifier("not json".getBytes(StandardCharsets.UTF_8))).isNull();
  }

  /** How many of the chain's blocks list {@code pod}, each key looked up alone. */
  private int held(long[] chain, String pod) {
    int held = 0;
    for (long key : chain) {
      held += layout.lookup(new long[] {key}, List.of(pod)).size();
    }
    return held;
  }

  private static ApplyPump.Feed feed(String pod, long[] chain, int from, int to) {
    return new ApplyPump.Feed(
        StreamId.of("m", pod), new ChainFeed(List.of(new ChainFeed.Span(chain, from, to)), 4));
  }
}
