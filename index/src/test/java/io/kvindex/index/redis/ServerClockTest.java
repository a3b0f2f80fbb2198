package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Connectors;
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The per-group estimate of Redis's clock, against each group's own node's TIME. */
class ServerClockTest {

  @Test
  @UsesRedisCluster
  void nowMillis_everyGroup_withinARoundTripOfItsNodesTime(RedisCluster cluster) throws Exception {
    try (RedisConnector connector = Connectors.connect(cluster)) {
      KeySchema keys = new KeySchema("clock", 6);
      ServerClock clock = new ServerClock(connector.scripts(RetryPolicy.defaults()), keys);
      for (int g = 0; g < keys.groups(); g++) {
        long before = redisMillis(connector, keys, g);
        long estimate = clock.nowMillis(g).get();
        long again = clock.nowMillis(g).get();
        long after = redisMillis(connector, keys, g);
        assertThat(estimate).as("group %d", g).isBetween(before - 50, after + 50);
        assertThat(again).as("group %d from the cache", g).isBetween(estimate, after + 50);
      }
    }
  }

  /**
   * A step of this host's wall clock (NTP, an operator) between two measurements moves nothing: the
   * estimate goes on with the monotonic clock.
   */
  @Test
  @UsesRedis
  void nowMillis_wallClockSteps_estimateFollowsTheMonotonicClock(RedisStandalone redis)
      throws Exception {
    try (RedisConnector connector = Connectors.connect(redis)) {
      KeySchema keys = new KeySchema("clock-step", 1);
      AtomicLong nanos = new AtomicLong(7_000_000_000L);
      AtomicLong wall = new AtomicLong(System.currentTimeMillis());
      ServerClock clock =
          new ServerClock(connector.scripts(RetryPolicy.defaults()), keys, nanos::get, wall::get);
      long before = redisMillis(connector, keys, 0);
      clock.nowMillis(0).get();
      long after = redisMillis(connector, keys, 0);

      nanos.addAndGet(500_000_000L);
      wall.addAndGet(Duration.ofHours(1).toMillis());
      long estimate = clock.nowMillis(0).get();

      assertThat(estimate).isBetween(before + 500 - 50, after + 500 + 50);
    }
  }

  private static final LuaScript TIME = LuaScript.of("test_time", "return redis.call('TIME')");

  /** TIME on the node serving group {@code g}, through a script keyed by the group's meta key. */
  private static long redisMillis(RedisConnector connector, KeySchema keys, int g)
      throws Exception {
    List<Object> time =
        connector
            .scripts(RetryPolicy.defaults())
            .<List<Object>>run(TIME, ScriptOutputType.MULTI, new byte[][] {keys.meta(g)})
            .toCompletableFuture()
            .get()
            .orElseThrow();
    long seconds = Long.parseLong(new String((byte[]) time.get(0), StandardCharsets.US_ASCII));
    long micros = Long.parseLong(new String((byte[]) time.get(1), StandardCharsets.US_ASCII));
    return seconds * 1000 + micros / 1000;
  }
}
