package io.kvindex.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.kvindex.index.Poll;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.RedisNode;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The demo stack's end on a Redis it was given: its keys go, whatever happened to Redis. */
class StackTest {

  /**
   * The primary serving the index lost for good mid-run (its replica promoted): the keys are
   * deleted on the primaries serving them now, and the dead node is not asked.
   */
  @Test
  @UsesRedisCluster
  void close_indexPrimaryLostForGood_deletesTheKeysOnTheCurrentPrimaries(
      @Fresh RedisCluster cluster) {
    String seeds =
        cluster.uris().stream()
            .map(u -> u.getHost() + ":" + u.getPort())
            .collect(Collectors.joining(","));
    Stack stack = Stack.start(config("redis-cluster://" + seeds), 256);
    String index = stack.indexName();
    byte[] blocks = new KeySchema(index, 1).blocksKey(0);
    ClusterNode primary = cluster.cluster().ownerOf(SlotHash.getSlot(blocks));
    assertThat(keysOn(primary, index)).as("the index's keys before the kill").isNotEmpty();

    primary.kill();
    Poll.until(
        () -> !cluster.cluster().ownerOf(SlotHash.getSlot(blocks)).uri().equals(primary.uri()),
        Duration.ofSeconds(30));
    cluster.cluster().awaitHealthy(Duration.ofSeconds(30));

    assertThatCode(stack::close).doesNotThrowAnyException();
    assertThat(stack.cleanup().failed()).as("%s", stack.cleanup()).isFalse();
    assertThat(stack.cleanup().keysDeleted()).isPositive();
    for (ClusterNode p : cluster.cluster().primaries()) {
      assertThat(keysOn(p, index)).as("keys left on %s", p.uri()).isEmpty();
    }
  }

  /** Redis gone before the cleanup: closing says what to run by hand, and throws nothing. */
  @Test
  void close_redisGoneBeforeTheCleanup_reportsTheCommandInsteadOfThrowing() {
    try (LocalRedis redis =
        LocalRedis.builder().setting("maxmemory-policy", "noeviction").start()) {
      Stack stack = Stack.start(config(redis.uri().toString()), 256);
      redis.kill();

      assertThatCode(stack::close).doesNotThrowAnyException();
      assertThat(stack.cleanup().failed()).isTrue();
      assertThat(stack.cleanup().problem())
          .contains("could not delete the demo's keys")
          .contains(
              "delete them with: redis-cli -h 127.0.0.1 -p "
                  + redis.port()
                  + " --scan --pattern '"
                  + KeySchema.keyPattern(stack.indexName())
                  + "' | xargs redis-cli -h 127.0.0.1 -p "
                  + redis.port()
                  + " unlink");
    }
  }

  private static DemoConfig config(String redisUri) {
    return DemoConfig.builder().redisUri(redisUri).pods(2).build();
  }

  /** Every key of the index on one node, by a SCAN of that node alone. */
  private static List<String> keysOn(RedisNode node, String index) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      RedisCommands<String, String> redis = c.sync();
      List<String> keys = new ArrayList<>();
      ScanArgs match = ScanArgs.Builder.matches(KeySchema.keyPattern(index)).limit(500);
      KeyScanCursor<String> page = redis.scan(match);
      keys.addAll(page.getKeys());
      while (!page.isFinished()) {
        page = redis.scan(ScanCursor.of(page.getCursor()), match);
        keys.addAll(page.getKeys());
      }
      return keys;
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
