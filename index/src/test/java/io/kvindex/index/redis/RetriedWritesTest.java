package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.index.Touches;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Writes that the write policy retries after a lost reply: the server stalls, the first attempt's
 * reply comes after the command timeout, and the call tries again, so the first attempt and its
 * retries all run. Each must answer as one call would, and change what one call would.
 */
@UsesRedis
class RetriedWritesTest {
  private static final String MODEL = "m";
  private static final StreamId STREAM = new StreamId(MODEL, "pod-a", 0);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private RedisConnector connector;
  private PrefixIndex index;

  private PrefixIndex open(RedisStandalone redis) {
    connector =
        RedisConnector.builder()
            .uri("redis://" + redis.uri().getHost() + ":" + redis.uri().getPort())
            .commandTimeout(Duration.ofMillis(200))
            .meterRegistry(registry)
            .build();
    RetryPolicy patient =
        RetryPolicy.builder()
            .maxAttempts(20)
            .initialBackoff(Duration.ofMillis(10))
            .maxBackoff(Duration.ofMillis(50))
            .totalBudget(Duration.ofSeconds(20))
            .build();
    index =
        PrefixIndex.builder().indexName("retried").redis(connector).writePolicy(patient).build();
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

  /** Runs {@code call} while the server stalls, until at least two attempts have timed out. */
  private <T> T afterALostReply(RedisStandalone redis, Supplier<T> call) throws Exception {
    double before = retries();
    redis.node().pause();
    CompletableFuture<T> result;
    try {
      result = CompletableFuture.supplyAsync(call);
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (retries() < before + 2 && System.nanoTime() < end) {
        Thread.sleep(10); // a poll interval: the attempts pile up in the stalled server
      }
      assertThat(retries() - before).as("attempts that timed out").isGreaterThanOrEqualTo(2);
    } finally {
      redis.node().resume();
    }
    return result.get(20, TimeUnit.SECONDS);
  }

  @Test
  void takeResync_retried_stillHandsTheRequestOver(@Fresh RedisStandalone redis) throws Exception {
    PrefixIndex index = open(redis);
    index.requestResyncAsync(MODEL, STREAM.pod(), "router: drift", Duration.ofMinutes(1)).join();

    Optional<String> taken =
        afterALostReply(redis, () -> index.takeResync(STREAM, Duration.ofMillis(1)));

    assertThat(taken).as("the request the first attempt took").contains("router: drift");
    assertThat(index.takeResync(STREAM, Duration.ofMillis(1))).as("a later take").isEmpty();
  }

  @Test
  void touch_retried_isAddedOnce(@Fresh RedisStandalone redis) throws Exception {
    PrefixIndex index = open(redis);
    String cursor = index.touches(STREAM, null, 10).cursor();

    boolean added =
        afterALostReply(
            redis,
            () ->
                index
                    .touchAsync(
                        MODEL, STREAM.pod(), 0, new long[] {1, 2, 3}, 1, 3, Duration.ofMinutes(1))
                    .join());

    assertThat(added).isTrue();
    Touches read = index.touches(STREAM, cursor, 10);
    assertThat(read.touches()).as("touches read").hasSize(1);
    assertThat(
            index
                .touchAsync(
                    MODEL, STREAM.pod(), 0, new long[] {1, 2, 3}, 1, 3, Duration.ofMinutes(1))
                .join())
        .isTrue();
    assertThat(index.touches(STREAM, read.cursor(), 10).touches())
        .as("another touch of the same prompt")
        .hasSize(1);
  }

  @Test
  void acquireLease_retried_returnsTheLeaseItGot(@Fresh RedisStandalone redis) throws Exception {
    PrefixIndex index = open(redis);

    Optional<Lease> lease =
        afterALostReply(
            redis, () -> index.acquireLease(STREAM, "replica-a", Duration.ofMinutes(1)));

    assertThat(lease).as("the lease the first attempt took").isPresent();
    assertThat(index.renewLease(STREAM, lease.get(), Duration.ofMinutes(1))).isTrue();
    assertThat(index.acquireLease(STREAM, "replica-b", Duration.ofMinutes(1))).isEmpty();
  }

  private double retries() {
    return registry.find("kvindex.redis.retries").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }
}
