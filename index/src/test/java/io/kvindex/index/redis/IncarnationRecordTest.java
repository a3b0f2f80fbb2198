package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The engine incarnation each stream's entries came from (incarnation.lua): one record per stream,
 * written by compare-and-set, so that neither another rank's owner nor a retried write hides an
 * engine restart from the stream's next owner.
 */
@UsesRedis
class IncarnationRecordTest {
  private static final String MODEL = "m";
  private static final StreamId RANK0 = new StreamId(MODEL, "pod-a", 0);
  private static final StreamId RANK1 = new StreamId(MODEL, "pod-a", 1);
  private static final Duration TTL = Duration.ofMinutes(1);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private RedisConnector connector;
  private PrefixIndex index;

  private PrefixIndex open(RedisStandalone redis, Duration commandTimeout) {
    connector =
        RedisConnector.builder()
            .uri("redis://" + redis.uri().getHost() + ":" + redis.uri().getPort())
            .commandTimeout(commandTimeout)
            .meterRegistry(registry)
            .build();
    index =
        PrefixIndex.builder()
            .indexName("incarnations")
            .redis(connector)
            .writePolicy(
                RetryPolicy.builder()
                    .maxAttempts(20)
                    .initialBackoff(Duration.ofMillis(10))
                    .maxBackoff(Duration.ofMillis(50))
                    .totalBudget(Duration.ofSeconds(20))
                    .build())
            .build();
    return index;
  }

  @AfterEach
  void close() {
    if (index != null) {
      index.close();
    }
    if (connector != null) {
      connector.close();
    }
  }

  @Test
  void record_eachRankKeepsItsOwn(RedisStandalone redis) {
    PrefixIndex index = open(redis, Duration.ofSeconds(2));
    assertThat(index.recordIncarnation(RANK0, null, "100", TTL)).isTrue();
    assertThat(index.recordIncarnation(RANK1, null, "100", TTL)).isTrue();

    // Rank 0's owner saw the restart and recorded the new engine: rank 1's record still says
    // where rank 1's entries came from, for whoever owns it next.
    assertThat(index.recordIncarnation(RANK0, "100", "200", TTL)).isTrue();

    assertThat(index.incarnation(RANK0)).hasValue("200");
    assertThat(index.incarnation(RANK1)).hasValue("100");
  }

  @Test
  void record_comparesBeforeItSets(RedisStandalone redis) {
    PrefixIndex index = open(redis, Duration.ofSeconds(2));
    assertThat(index.incarnation(RANK0)).isEmpty();
    assertThat(index.recordIncarnation(RANK0, null, "100", TTL)).isTrue();

    assertThat(index.recordIncarnation(RANK0, null, "300", TTL)).as("expected none").isFalse();
    assertThat(index.recordIncarnation(RANK0, "200", "300", TTL)).as("expected 200").isFalse();
    assertThat(index.incarnation(RANK0)).hasValue("100");
    assertThat(index.recordIncarnation(RANK0, "100", "100", TTL)).as("a refresh").isTrue();
    assertThat(index.recordIncarnation(RANK0, "100", "300", TTL)).isTrue();
    assertThat(index.incarnation(RANK0)).hasValue("300");
  }

  /**
   * The write's first attempt runs, its reply comes too late (the server stalls), and the call
   * tries again: the retry finds the record already moved and must still answer that it holds the
   * new incarnation, not that another owner changed it.
   */
  @Test
  void record_retriedAfterALostReply_answersAsTheFirstAttempt(@Fresh RedisStandalone redis)
      throws Exception {
    PrefixIndex index = open(redis, Duration.ofMillis(200));
    assertThat(index.recordIncarnation(RANK0, null, "100", TTL)).isTrue();

    redis.node().pause();
    CompletableFuture<Boolean> recorded;
    try {
      recorded =
          CompletableFuture.supplyAsync(() -> index.recordIncarnation(RANK0, "100", "200", TTL));
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (retries() < 2 && System.nanoTime() < end) {
        Thread.sleep(10); // a poll interval: the attempts pile up in the stalled server
      }
      assertThat(retries()).as("attempts that timed out").isGreaterThanOrEqualTo(2);
    } finally {
      redis.node().resume();
    }

    assertThat(recorded.get(20, TimeUnit.SECONDS)).isTrue();
    assertThat(index.incarnation(RANK0)).hasValue("200");
  }

  private double retries() {
    return registry.find("kvindex.redis.retries").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }
}
