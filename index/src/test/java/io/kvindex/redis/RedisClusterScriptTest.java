package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Poll;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Scripts and the error policy on a real Redis Cluster. */
@UsesRedisCluster
class RedisClusterScriptTest {

  private static final LuaScript INCR =
      LuaScript.of("cluster_incr", "-- cluster test\nreturn redis.call('INCR', KEYS[1])");

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private RedisConnector connector;

  @AfterEach
  void closeConnector() {
    if (connector != null) {
      connector.close();
    }
  }

  private ScriptRunner connect(RedisCluster redis, RetryPolicy policy) {
    return connect(redis, policy, Duration.ofSeconds(1));
  }

  private ScriptRunner connect(RedisCluster redis, RetryPolicy policy, Duration refreshPeriod) {
    String seeds =
        redis.uris().stream()
            .map(uri -> uri.getHost() + ":" + uri.getPort())
            .collect(Collectors.joining(","));
    connector =
        RedisConnector.builder()
            .uri("redis-cluster://" + seeds)
            .commandTimeout(Duration.ofMillis(500))
            .topologyRefreshPeriod(refreshPeriod)
            .meterRegistry(registry)
            .build();
    assertThat(connector.isCluster()).isTrue();
    return connector.scripts(policy);
  }

  private static byte[][] keys(String... keys) {
    byte[][] bytes = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      bytes[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
    return bytes;
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private double count(String name, String tag, String value) {
    return registry.find(name).tag(tag, value).counters().stream()
        .mapToDouble(c -> c.count())
        .sum();
  }

  @Test
  void run_everyShardLoadsTheScriptOnce(RedisCluster redis) throws Exception {
    ScriptRunner runner = connect(redis, RetryPolicy.defaults());

    for (int round = 1; round <= 2; round++) {
      for (int group = 0; group < 16; group++) {
        byte[][] key = keys("kvindex:test:{g" + group + "}:counter");
        assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, key)).orElseThrow())
            .isEqualTo((long) round);
      }
    }
    // One EVAL per primary that owns one of the 16 groups, and no more in the second round.
    assertThat(count(RedisMetrics.RELOADS, "script", "cluster_incr")).isBetween(1.0, 3.0);
  }

  @Test
  void preload_loadsIntoEveryNode(RedisCluster redis) throws Exception {
    ScriptRunner runner = connect(redis, RetryPolicy.defaults());
    LuaScript decr =
        LuaScript.of("cluster_decr", "-- preload test\nreturn redis.call('DECR', KEYS[1])");

    assertThat(await(runner.preload(decr)).isDone()).isTrue();

    for (int group = 0; group < 16; group++) {
      byte[][] key = keys("kvindex:test:{p" + group + "}:counter");
      assertThat(await(runner.<Long>run(decr, ScriptOutputType.INTEGER, key)).orElseThrow())
          .isEqualTo(-1L);
    }
    assertThat(count(RedisMetrics.RELOADS, "script", "cluster_decr")).isZero();
  }

  /**
   * A primary lost for good, its replica promoted: the cluster keeps the dead node in its node list
   * (failed, without slots); preloading must not wait on it, the primaries are the live ones, and
   * once the topology says so the connector stops reconnecting to it. (A periodic topology refresh
   * still tries it once, lettuce discovering nodes from the live nodes' lists: no periodic refresh
   * here.)
   */
  @Test
  void aPrimaryLostForGood_nothingAsksTheDeadNode(@Fresh RedisCluster redis) throws Exception {
    ScriptRunner runner = connect(redis, RetryPolicy.defaults(), Duration.ofMinutes(10));
    byte[][] key = keys("kvindex:test:{lost}:counter");
    ClusterNode primary = redis.cluster().ownerOf(SlotHash.getSlot(key[0]));
    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, key)).orElseThrow())
        .isEqualTo(1L); // a connection to the primary, which will die
    primary.kill();
    Poll.until(
        () -> !redis.cluster().ownerOf(SlotHash.getSlot(key[0])).uri().equals(primary.uri()),
        Duration.ofSeconds(30));
    redis.cluster().awaitHealthy(Duration.ofSeconds(30));
    Poll.until(() -> healed(runner, key), Duration.ofSeconds(30)); // the client saw the promotion
    LuaScript decr =
        LuaScript.of("cluster_lost_decr", "-- lost primary\nreturn redis.call('DECR', KEYS[1])");

    RedisOutcome<Void> preloaded = await(runner.preload(decr));

    assertThat(preloaded.isDone()).as("preload: %s", preloaded).isTrue();
    for (int group = 0; group < 16; group++) {
      byte[][] each = keys("kvindex:test:{q" + group + "}:counter");
      assertThat(await(runner.<Long>run(decr, ScriptOutputType.INTEGER, each)).orElseThrow())
          .isEqualTo(-1L);
    }
    assertThat(count(RedisMetrics.RELOADS, "script", "cluster_lost_decr")).isZero();

    List<RedisConnector.Node> primaries = await(connector.primaries());
    assertThat(primaries)
        .extracting(RedisConnector.Node::address)
        .containsExactlyInAnyOrderElementsOf(
            redis.cluster().primaries().stream().map(p -> p.host() + ":" + p.port()).toList())
        .doesNotContain(primary.host() + ":" + primary.port());
    for (RedisConnector.Node p : primaries) {
      assertThat(await(p.commands().info("replication"))).as(p.address()).contains("role:master");
    }

    // Listen where the dead node was: with its topology read again, the connector must never call.
    await(connector.primaries()); // reads the topology again
    try (ServerSocket deadPort = new ServerSocket()) {
      deadPort.bind(new InetSocketAddress(primary.host(), primary.port()));
      AtomicInteger calls = new AtomicInteger();
      Thread listener =
          new Thread(
              () -> {
                while (!deadPort.isClosed()) {
                  try (Socket s = deadPort.accept()) {
                    calls.incrementAndGet();
                  } catch (IOException closed) {
                    return;
                  }
                }
              },
              "dead-node-port");
      listener.start();
      // An absence can only be watched for a while: longer than the connector's 2 s longest
      // reconnect delay.
      TimeUnit.SECONDS.sleep(5);
      deadPort.close();
      listener.join();
      assertThat(calls.get()).as("connections to the dead node's port").isZero();
    }
  }

  private static boolean healed(ScriptRunner runner, byte[][] key) {
    try {
      return await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, key)).isDone();
    } catch (Exception e) {
      return false;
    }
  }

  @Test
  void run_keysInTwoSlotsIsCrossSlot(RedisCluster redis) throws Exception {
    ScriptRunner runner = connect(redis, RetryPolicy.defaults());
    LuaScript two = LuaScript.of("two_keys", "return redis.call('MGET', KEYS[1], KEYS[2])");
    byte[][] keys = keys("kvindex:test:{a}:x", "kvindex:test:{b}:x");

    try {
      await(runner.run(two, ScriptOutputType.MULTI, keys));
      throw new AssertionError("expected CROSSSLOT");
    } catch (ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(RedisRealException.class);
      assertThat(((RedisRealException) e.getCause()).code()).isEqualTo("CROSSSLOT");
    }
  }

  @Test
  void run_primaryKilledSwallowedThenHealsAfterFailover(
      @Fresh(nodeTimeoutMillis = 1000) RedisCluster redis) throws Exception {
    RetryPolicy quick =
        RetryPolicy.builder()
            .maxAttempts(3)
            .initialBackoff(Duration.ofMillis(10))
            .maxBackoff(Duration.ofMillis(20))
            .totalBudget(Duration.ofMillis(300))
            .build();
    ScriptRunner runner = connect(redis, quick);
    byte[][] key = keys("kvindex:test:{failover}:counter");
    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, key)).orElseThrow())
        .isEqualTo(1L);
    ClusterNode primary = redis.cluster().ownerOf(SlotHash.getSlot(key[0]));

    primary.kill();
    long killed = System.nanoTime();
    RedisOutcome<Long> during = await(runner.run(INCR, ScriptOutputType.INTEGER, key));
    assertThat(during.isDone()).isFalse();

    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    RedisOutcome<Long> after = during;
    while (!after.isDone() && System.nanoTime() < deadline) {
      after = await(runner.run(INCR, ScriptOutputType.INTEGER, key));
    }
    assertThat(after.isDone()).as("healed after the failover, last: %s", after).isTrue();
    System.out.printf(
        "failover healed %d ms after the kill%n",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
    assertThat(count(RedisMetrics.SWALLOWED, "operation", "cluster_incr")).isGreaterThan(0);
    // The promoted replica never had the script (EVAL replicates effects only).
    assertThat(count(RedisMetrics.RELOADS, "script", "cluster_incr")).isGreaterThanOrEqualTo(2);
  }
}
