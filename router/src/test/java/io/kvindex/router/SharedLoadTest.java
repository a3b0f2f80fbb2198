package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.KeyMode;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The load view every router of a fleet shares through the index, on real Redis. */
@UsesRedis
class SharedLoadTest {
  private static final String MODEL = "Qwen/Qwen3-8B";
  private static final ModelKeys KEYS = ModelKeys.engine("sha256_cbor", "42", 16);
  private static final List<String> PODS = List.of("pod-a", "pod-b");

  private static KvRouter router(RedisStandalone redis, String index, boolean shared, String id) {
    return builder(redis, index, shared, id).build();
  }

  private static KvRouterBuilder builder(
      RedisStandalone redis, String index, boolean shared, String id) {
    return KvRouter.builder()
        .redisUri(KvRouterTest.uri(redis))
        .indexName(index)
        .model(MODEL, KEYS)
        .lookupBudget(Duration.ofSeconds(1))
        .sharedLoad(shared)
        .sharedLoadTtl(Duration.ofMillis(600))
        .routerId(id);
  }

  /** The load {@code router}'s pick saw on {@code pod} for {@code tokens}. */
  private static double loadSeen(KvRouter router, int[] tokens, String pod) {
    Scores scores = router.score(MODEL, null, tokens, PODS);
    return router.explain(scores, PODS, LoadSignal.none()).candidates().stream()
        .filter(c -> c.pod().equals(pod))
        .findFirst()
        .orElseThrow()
        .load();
  }

  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waited 20 s for %s", what).isLessThan(deadline);
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + what, e);
      }
    }
  }

  @Test
  void started_showsInEveryOtherRoutersPicks_untilFinished(RedisStandalone redis) {
    String index = "shared-load";
    try (IndexFixture writer =
            new IndexFixture(KvRouterTest.uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter first = router(redis, index, true, "first");
        KvRouter second = router(redis, index, true, "second")) {
      int[] tokens = KvRouterTest.prompt(16 * 4, 1);
      List<InFlight> sent = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Scores scores = first.score(MODEL, null, tokens, PODS);
        Pick pick = new Pick("pod-a", Pick.Reason.LEAST_LOAD, 0, false);
        sent.add(first.started(scores, pick, tokens.length));
      }
      Scores other = second.score(MODEL, null, tokens, PODS);
      sent.add(second.started(other, new Pick("pod-b", Pick.Reason.LEAST_LOAD, 0, false), -1));

      // Each router's writes travel on its own connection: the other sees them within a moment.
      await(
          "the first router's 3 picks in the second's view",
          () -> loadSeen(second, tokens, "pod-a") == 3);
      await(
          "the second router's pick in the first's view",
          () -> loadSeen(first, tokens, "pod-b") == 1);
      assertThat(loadSeen(first, tokens, "pod-a")).as("its own, from memory").isEqualTo(3);

      sent.get(0).firstToken();
      sent.get(0).finished();
      sent.get(0).finished();
      sent.get(1).finished();
      await("two of three ended, each once", () -> loadSeen(second, tokens, "pod-a") == 1);
      assertThat(loadSeen(first, tokens, "pod-a")).as("its own, from memory").isEqualTo(1);

      sent.forEach(InFlight::finished);
      await("every request ended", () -> loadSeen(second, tokens, "pod-a") == 0);
      await("every request ended", () -> loadSeen(first, tokens, "pod-b") == 0);
      try (RedisConnector raw = RedisConnector.connect(KvRouterTest.uri(redis))) {
        byte[] key = new KeySchema(index, 1).sharedLoad(MODEL);
        assertThat(raw.commands().hlen(key).toCompletableFuture().join())
            .as("a share that falls to zero is deleted")
            .isZero();
      }
    }
  }

  @Test
  void crashedRoutersShare_leavesTheViewWithinItsTtl(RedisStandalone redis) {
    String index = "shared-load-crash";
    try (IndexFixture writer =
            new IndexFixture(KvRouterTest.uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter crashing = router(redis, index, true, "crashing");
        KvRouter survivor = router(redis, index, true, "survivor");
        RedisConnector raw = RedisConnector.connect(KvRouterTest.uri(redis))) {
      int[] tokens = KvRouterTest.prompt(16 * 4, 2);
      Scores scores = crashing.score(MODEL, null, tokens, PODS);
      for (int i = 0; i < 5; i++) {
        crashing.started(scores, new Pick("pod-a", Pick.Reason.LEAST_LOAD, 0, false), -1);
      }
      long start = System.nanoTime();
      await("three heartbeats", () -> System.nanoTime() - start > Duration.ofMillis(700).toNanos());
      // Past its TTL a share not rewritten would be gone for good: the heartbeat keeps it.
      await("a live router's share past its TTL", () -> loadSeen(survivor, tokens, "pod-a") == 5);

      ((RedisKvRouter) crashing).sharedLoad().abandon();

      await(
          "the crashed router's share to leave the view",
          () -> loadSeen(survivor, tokens, "pod-a") == 0);
      byte[] key = new KeySchema(index, 1).sharedLoad(MODEL);
      await(
          "a reader to delete the long-expired field",
          () -> {
            loadSeen(survivor, tokens, "pod-a");
            return raw.commands().hlen(key).toCompletableFuture().join() == 0;
          });
    }
  }

  @Test
  void sharedView_movesAPickTheLocalViewSendsToAQueue(RedisStandalone redis) {
    String index = "shared-load-pick";
    try (IndexFixture writer =
            new IndexFixture(KvRouterTest.uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter busy = router(redis, index, true, "busy");
        KvRouter shared = router(redis, index, true, "shared");
        KvRouter local = router(redis, index, false, "local")) {
      int[] tokens = KvRouterTest.prompt(16 * 8, 3);
      long[] keys = busy.blockKeys(MODEL, null, null, tokens);
      writer.store(MODEL, "pod-a", Arrays.copyOf(keys, 4), null);
      // The other gateway's requests: two long prompts queued on the warm pod.
      for (int i = 0; i < 2; i++) {
        Scores other = busy.score(MODEL, null, KvRouterTest.prompt(16 * 500, 10 + i), PODS);
        busy.started(other, new Pick("pod-a", Pick.Reason.LEAST_LOAD, 0, false), -1);
      }

      await(
          "the other gateway's requests in the view", () -> loadSeen(shared, tokens, "pod-a") == 2);

      Scores asLocal = local.score(MODEL, null, tokens, PODS);
      Pick localPick = local.pick(asLocal, PODS, LoadSignal.none());
      Scores asShared = shared.score(MODEL, null, tokens, PODS);
      Pick sharedPick = shared.pick(asShared, PODS, LoadSignal.none());

      assertThat(localPick.pod()).as("alone, the warm pod looks idle").isEqualTo("pod-a");
      assertThat(sharedPick.pod())
          .as("with the fleet's load, 16 000 queued tokens outweigh 64 cached ones")
          .isEqualTo("pod-b");
    }
  }

  @Test
  void lookupsWithinTheMinimumAge_shareOneRead_andStillSeeTheOthersAfterIt(RedisStandalone redis) {
    String index = "shared-load-age";
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (IndexFixture writer =
            new IndexFixture(KvRouterTest.uri(redis), index, MODEL, KeyMode.ENGINE);
        KvRouter other = router(redis, index, true, "other");
        KvRouter reader =
            builder(redis, index, true, "reader")
                .sharedLoadMinAge(Duration.ofSeconds(1))
                .meterRegistry(registry)
                .build()) {
      int[] tokens = KvRouterTest.prompt(16 * 4, 4);
      double before = registry.counter("kvindex.router.shared.load.reads").count();
      for (int i = 0; i < 20; i++) {
        reader.score(MODEL, null, tokens, PODS);
      }
      assertThat(registry.counter("kvindex.router.shared.load.reads").count() - before)
          .as("20 lookups within a second of each other: not a read each")
          .isLessThan(20);

      Scores scores = other.score(MODEL, null, tokens, PODS);
      other.started(scores, new Pick("pod-b", Pick.Reason.LEAST_LOAD, 0, false), -1);
      await(
          "the other's pick, once the view is old enough",
          () -> loadSeen(reader, tokens, "pod-b") == 1);
    }
  }

  @Test
  void aRoutersField_holdsItsWholeShare_andAnotherLayoutIsSkipped() {
    Map<String, long[]> share = new LinkedHashMap<>();
    share.put("pod-a", new long[] {3, 4096});
    share.put("pöd-b", new long[] {1, 0});
    byte[] value = SharedLoad.encode(123_456L, share);
    assertThat(ByteBuffer.wrap(value).getLong()).as("the expiry first").isEqualTo(123_456L);
    Map<String, long[]> sum = new HashMap<>();
    sum.put("pod-a", new long[] {1, 1});
    assertThat(SharedLoad.decode(value, sum)).isTrue();
    assertThat(sum.get("pod-a")).containsExactly(4, 4097);
    assertThat(sum.get("pöd-b")).containsExactly(1, 0);

    Map<String, long[]> untouched = new HashMap<>();
    byte[] text = "1|0|1733500000000".getBytes(StandardCharsets.US_ASCII);
    assertThat(SharedLoad.decode(text, untouched)).as("a value of another layout").isFalse();
    assertThat(SharedLoad.decode(Arrays.copyOf(value, value.length - 3), untouched))
        .as("a value cut short")
        .isFalse();
    assertThat(untouched).isEmpty();
  }
}
