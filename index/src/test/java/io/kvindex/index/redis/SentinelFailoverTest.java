package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.LocalRedisSentinel;
import io.kvindex.localredis.RedisNode;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisSentinel;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The index through a {@code redis-sentinel://} URI while Sentinel replaces a killed primary with
 * its replica: the same connector writes and looks up again once the replica is promoted. The
 * promoted replica may lack the last acknowledged writes, so its first write resets the group and
 * the stream replays from its first batch. Errors during the switch are the connector's temporary
 * ones: retried, then swallowed.
 */
@UsesRedis
class SentinelFailoverTest {
  private static final String MODEL = "m";
  private static final StreamId STREAM = StreamId.of(MODEL, "pod-a");
  private static final Duration SWITCH = Duration.ofSeconds(60);

  @Test
  void primaryKilled_replicaPromoted_writesAndLookupsWorkAgain(RedisSentinel redis) {
    LocalRedisSentinel set = redis.sentinel();
    List<Long> blocks = hashes(1000, 8);
    try (RedisConnector connector =
            RedisConnector.builder()
                .uri(redis.uri())
                .meterRegistry(new SimpleMeterRegistry())
                .build();
        PrefixIndex index =
            PrefixIndex.builder()
                .indexName("sentinel")
                .redis(connector)
                .lookupPolicy(RetryPolicy.defaults())
                .build()) {
      Lease lease = index.acquireLease(STREAM, "owner", Duration.ofMinutes(5)).orElseThrow();
      assertThat(apply(index, lease, 0, blocks.subList(0, 4), null)).isEqualTo(ApplyStatus.APPLIED);
      assertThat(depth(index, blocks)).isEqualTo(4);
      set.awaitReplicated(Duration.ofSeconds(10));

      RedisNode old = set.primary();
      old.kill();
      RedisNode promoted = set.awaitPrimaryOtherThan(old, SWITCH);

      assertThat(promoted.port()).isNotEqualTo(old.port());
      AtomicReference<ApplyStatus> first = new AtomicReference<>();
      Poll.until(
          () -> {
            ApplyStatus status = apply(index, lease, 1, blocks.subList(4, 8), blocks.get(3));
            first.set(status);
            return status != ApplyStatus.SWALLOWED;
          },
          SWITCH);
      assertThat(first.get())
          .as("the first write on the promoted replica resets the group")
          .isEqualTo(ApplyStatus.RESET);
      assertThat(depth(index, blocks)).as("nothing from before the promotion").isZero();
      assertThat(apply(index, lease, 0, blocks.subList(0, 4), null)).isEqualTo(ApplyStatus.APPLIED);
      assertThat(apply(index, lease, 1, blocks.subList(4, 8), blocks.get(3)))
          .isEqualTo(ApplyStatus.APPLIED);
      Poll.until(() -> depth(index, blocks) == 8, SWITCH);
      assertThat(index.watermark(STREAM)).hasValue(1);
    }
  }

  private static ApplyStatus apply(
      PrefixIndex index, Lease lease, long seq, List<Long> keys, Long parent) {
    return index
        .apply(STREAM, KeyMode.ENGINE, seq, lease, batch(stored(keys, parent, null)))
        .status();
  }

  /** The pod's depth, or -1 while the index does not answer. */
  private static int depth(PrefixIndex index, List<Long> keys) {
    LookupResult result =
        index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(STREAM.pod())));
    return result.complete() ? result.pods().get(STREAM.pod()).depth() : -1;
  }
}
