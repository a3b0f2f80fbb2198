package io.kvindex.ingester;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.redis.KeySchema;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The ingester when Redis fails: temporary errors stay pending, real ones surface. */
@UsesRedis
class RedisFaultsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private Rig rig;
  private Fleet fleet;

  @AfterEach
  void tearDown() {
    if (rig != null) {
      rig.close();
    }
    if (fleet != null) {
      fleet.close();
    }
  }

  private Ingester start(RedisStandalone redis) {
    rig = new Rig(redis);
    fleet = Fleet.start(1);
    Ingester ingester =
        rig.start(
            "r1",
            fleet.specs("engine"),
            b ->
                b.leaseTtl(Duration.ofSeconds(60))
                    .redisTimeout(Duration.ofMillis(300))
                    .redisRetryBudget(Duration.ofSeconds(1)));
    Await.until(WAIT, "stream owned", () -> ingester.workers().size() == 1);
    rig.warmUp(fleet, fleet.pod(0));
    fleet.traffic(10);
    rig.awaitCaughtUp(fleet.pod(0), WAIT);
    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    return ingester;
  }

  @Test
  void allBlocksCleared_temporaryErrorIsSwallowedAndThePurgeCompletesWhenRedisReturns(
      @Fresh RedisStandalone redis) {
    Ingester ingester = start(redis);
    Set<Long> before = new HashSet<>(fleet.pod(0).cachedBlocks(0, "GPU"));
    IngesterMetrics m = ingester.metrics();

    redis.node().pause();
    try {
      fleet.pod(0).resetPrefixCache();
      fleet.traffic(fleet.pod(0), 1);
      Await.until(
          WAIT,
          "the purge met a temporary error",
          () -> m.value("kvindex.ingester.purges", "outcome", "pending") >= 2);
      assertThat(m.value("kvindex.ingester.redis.swallowed", "operation", "apply")).isPositive();
      assertThat(m.value("kvindex.ingester.purges", "outcome", "done")).isZero();
      assertThat(ingester.workers().values().iterator().next().status().applied())
          .as("the stream does not advance past the pending purge")
          .isLessThan(fleet.pod(0).nextSequence(0) - 1);
    } finally {
      redis.node().resume();
    }

    rig.awaitCaughtUp(fleet.pod(0), WAIT);
    rig.awaitEqual(fleet.pod(0), fleet.everHeld(), WAIT);
    Set<Long> gone = new HashSet<>(before);
    gone.removeAll(fleet.pod(0).cachedBlocks(0, "GPU"));
    assertThat(gone).isNotEmpty();
    assertThat(rig.held("pod-0", gone)).isEmpty();
    assertThat(m.value("kvindex.ingester.purges", "reason", "all_blocks_cleared"))
        .isGreaterThanOrEqualTo(2.0);
    assertThat(
            m.registry()
                .find("kvindex.ingester.purges")
                .tag("reason", "all_blocks_cleared")
                .tag("outcome", "done")
                .counters())
        .as("purged once")
        .singleElement()
        .satisfies(c -> assertThat(c.count()).isEqualTo(1.0));
    assertThat(m.total("kvindex.ingester.errors")).isZero();
  }

  @Test
  void close_whileRedisIsStopped_countsNoError(@Fresh RedisStandalone redis) {
    Ingester ingester = start(redis);
    IngesterMetrics m = ingester.metrics();
    redis.node().pause();
    try {
      // Coordination, reconciling and GC run every 200 ms; each call now waits out its budget
      // (1 s), and a round that gave up is soon waiting in the next.
      Await.until(
          WAIT,
          "a call gave up on the stopped Redis",
          () -> m.total("kvindex.redis.swallowed") > 0);
      ingester.close(); // interrupts the rounds waiting on Redis
    } finally {
      redis.node().resume();
    }
    assertThat(m.total("kvindex.ingester.errors")).as("stopping is not an error").isZero();
  }

  @Test
  void realError_marksTheStreamFailedOnReadyz(@Fresh RedisStandalone redis) throws Exception {
    Ingester ingester = start(redis);
    assertThat(get(ingester, "/readyz").statusCode()).isEqualTo(200);

    RedisClient client = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      // KEYS, not one SCAN page: a page may hold none of the matches (this Redis is the test's own)
      List<String> keys = c.sync().keys(KeySchema.keyPattern(Rig.INDEX) + ":streams");
      assertThat(keys).hasSize(1);
      c.sync().del(keys.get(0));
      c.sync().set(keys.get(0), "not a hash"); // every apply now fails with WRONGTYPE
      Await.until( // a request whose blocks are all cached publishes nothing: serve until one does
          WAIT,
          "the stream marked failed",
          () -> {
            fleet.traffic(fleet.pod(0), 1);
            return ingester.workers().values().iterator().next().status().state()
                == StreamStatus.State.FAILED;
          });
      HttpResponse<String> ready = get(ingester, "/readyz");
      assertThat(ready.statusCode()).isEqualTo(503);
      String error = ingester.workers().values().iterator().next().status().lastError();
      assertThat(error).as("what the stream knows of its failure").contains("WRONGTYPE");
      assertThat(ready.body())
          .as("/readyz names the part, never the exception's text")
          .contains("stream pod-0/dp0 failed")
          .doesNotContain(error)
          .doesNotContain("WRONGTYPE")
          .doesNotContain("Exception");
      assertThat(ingester.metrics().total("kvindex.ingester.errors")).isPositive();
      assertThat(get(ingester, "/metrics").body()).contains("kvindex_ingester_streams_failed 1.0");
      assertThat(get(ingester, "/healthz").statusCode()).isEqualTo(200);

      c.sync().del(keys.get(0));
    } finally {
      client.shutdown();
    }
    fleet.traffic(fleet.pod(0), 1);
    Await.until(WAIT, "ready again", () -> get(ingester, "/readyz").statusCode() == 200);
  }

  private static HttpResponse<String> get(Ingester ingester, String path) {
    try {
      return HttpClient.newHttpClient()
          .send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ingester.httpPort() + path))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
