package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.RedisBusyException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The error policy against real redis-server processes and real faults. */
@UsesRedis
class RedisFaultTest {

  private static final LuaScript INCR = LuaScript.of("incr", "return redis.call('INCR', KEYS[1])");
  private static final LuaScript SET_GET =
      LuaScript.of(
          "set_get", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])");
  private static final LuaScript DEL = LuaScript.of("del", "return redis.call('DEL', KEYS[1])");
  private static final byte[][] KEY = {bytes("kvindex:test:{g}:counter")};

  /** Keeps the server busy for ARGV[1] microseconds without writing. */
  private static final String BUSY_LOOP =
      "local function now() local t = redis.call('TIME')"
          + " return tonumber(t[1]) * 1000000 + tonumber(t[2]) end"
          + " local start = now()"
          + " while now() - start < tonumber(ARGV[1]) do end"
          + " return 1";

  /** Three attempts within a budget five times the 200 ms command timeout the tests set. */
  private static final RetryPolicy BEYOND_TIMEOUT =
      RetryPolicy.builder()
          .maxAttempts(3)
          .initialBackoff(Duration.ofMillis(10))
          .maxBackoff(Duration.ofMillis(20))
          .totalBudget(Duration.ofSeconds(1))
          .build();

  private static final RetryPolicy QUICK =
      RetryPolicy.builder()
          .maxAttempts(5)
          .initialBackoff(Duration.ofMillis(10))
          .maxBackoff(Duration.ofMillis(50))
          .totalBudget(Duration.ofMillis(500))
          .build();

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private RedisConnector connector;

  @AfterEach
  void closeConnector() {
    if (connector != null) {
      connector.close();
    }
  }

  private RedisConnector connect(String uri, Duration commandTimeout) {
    connector =
        RedisConnector.builder()
            .uri(uri)
            .commandTimeout(commandTimeout)
            .meterRegistry(registry)
            .build();
    return connector;
  }

  private RedisConnector connect(RedisStandalone redis) {
    return connect(uriOf(redis), Duration.ofSeconds(2));
  }

  private static String uriOf(RedisStandalone redis) {
    return "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private static Throwable failureOf(CompletionStage<?> stage) throws Exception {
    try {
      stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    }
    throw new AssertionError("expected the call to fail");
  }

  private double count(String name, String tag, String value) {
    return registry.find(name).tag(tag, value).counters().stream()
        .mapToDouble(c -> c.count())
        .sum();
  }

  /** Polls {@code call} until it gives a {@link RedisOutcome.Done}, for at most {@code limit}. */
  private static <T> T awaitDone(Duration limit, Supplier<CompletionStage<RedisOutcome<T>>> call)
      throws Exception {
    long deadline = System.nanoTime() + limit.toNanos();
    RedisOutcome<T> outcome = await(call.get());
    while (!outcome.isDone() && System.nanoTime() < deadline) {
      outcome = await(call.get());
    }
    return outcome.orElseThrow();
  }

  @Test
  void run_reloadsScriptAfterScriptFlush(@Fresh RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());

    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(1L);
    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(2L);
    assertThat(count(RedisMetrics.RELOADS, "script", "incr")).isEqualTo(1);

    await(connector.commands().scriptFlush());

    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(3L);
    assertThat(count(RedisMetrics.RELOADS, "script", "incr")).isEqualTo(2);
    assertThat(count(RedisMetrics.RETRIES, "operation", "incr")).isZero();
  }

  @Test
  void preload_avoidsReloads(@Fresh RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());

    assertThat(await(runner.preload(INCR, SET_GET)).isDone()).isTrue();

    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(1L);
    assertThat(count(RedisMetrics.RELOADS, "script", "incr")).isZero();
  }

  @Test
  void run_binaryKeysAndArgs(RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    byte[] key = {'k', 0, (byte) 0xff, (byte) 0x80, '{', '}'};
    byte[] value = {0, 1, (byte) 0xfe, (byte) 0xc3, 0x28};

    byte[] reply =
        await(runner.<byte[]>run(SET_GET, ScriptOutputType.VALUE, new byte[][] {key}, value))
            .orElseThrow();

    assertThat(reply).isEqualTo(value);
  }

  @Test
  void run_luaErrorIsRealAtOnce(RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    LuaScript failing = LuaScript.of("failing", "return error('boom')");

    Throwable failure = failureOf(runner.run(failing, ScriptOutputType.INTEGER, KEY));

    assertThat(failure).isExactlyInstanceOf(RedisRealException.class).hasMessageContaining("boom");
    assertThat(((RedisRealException) failure).reason()).isEqualTo("lua");
    assertThat(count(RedisMetrics.ERRORS, "reason", "lua")).isEqualTo(1);
    assertThat(count(RedisMetrics.RETRIES, "operation", "failing")).isZero();
  }

  @Test
  void run_wrongTypeIsReal(RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    await(connector.commands().set(KEY[0], bytes("a string")));
    LuaScript sadd = LuaScript.of("sadd", "return redis.call('SADD', KEYS[1], 'x')");

    Throwable failure = failureOf(runner.run(sadd, ScriptOutputType.INTEGER, KEY));

    assertThat(failure).isInstanceOf(RedisRealException.class);
    assertThat(((RedisRealException) failure).code()).isEqualTo("WRONGTYPE");
  }

  @Test
  void run_ownScriptCodeIsScriptRejected(RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    LuaScript fenced =
        LuaScript.of("fenced", "return redis.error_reply('KVINDEX_TEST stale token 3')");

    Throwable failure = failureOf(runner.run(fenced, ScriptOutputType.INTEGER, KEY));

    assertThat(failure).isInstanceOf(ScriptRejectedException.class);
    assertThat(((ScriptRejectedException) failure).code()).isEqualTo("KVINDEX_TEST");
    assertThat(((ScriptRejectedException) failure).detail()).isEqualTo("stale token 3");
  }

  @Test
  void run_oomIsCapacityErrorAndDeletesStillWork(
      @Fresh(settings = "maxmemory-policy noeviction") RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    await(runner.run(INCR, ScriptOutputType.INTEGER, KEY));
    await(connector.commands().configSet("maxmemory", "1"));

    Throwable failure = failureOf(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

    assertThat(failure)
        .isInstanceOf(IndexCapacityException.class)
        .hasMessageContaining("raise maxmemory");
    assertThat(count(RedisMetrics.ERRORS, "reason", "oom")).isEqualTo(1);
    assertThat(count(RedisMetrics.RETRIES, "operation", "incr")).isZero();
    assertThat(await(runner.<Long>run(DEL, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(1L);
  }

  @Test
  void run_busyIsRetriedUntilTheOtherScriptEnds(
      @Fresh(settings = "busy-reply-threshold 100") RedisStandalone redis) throws Exception {
    ScriptRunner runner =
        connect(redis)
            .scripts(
                RetryPolicy.builder()
                    .maxAttempts(50)
                    .initialBackoff(Duration.ofMillis(50))
                    .maxBackoff(Duration.ofMillis(100))
                    .totalBudget(Duration.ofSeconds(10))
                    .build());
    RedisClient other = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> busy = other.connect()) {
      CompletionStage<Long> longScript =
          busy.async().eval(BUSY_LOOP, ScriptOutputType.INTEGER, new String[0], "800000");
      awaitBusy();

      RedisOutcome<Long> outcome = await(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

      assertThat(outcome.orElseThrow()).isEqualTo(1L);
      assertThat(count(RedisMetrics.RETRIES, "reason", "busy")).isGreaterThanOrEqualTo(1);
      assertThat(await(longScript)).isEqualTo(1L);
    } finally {
      other.shutdown();
    }
  }

  /** Waits until the server answers BUSY (the long script has passed busy-reply-threshold). */
  private void awaitBusy() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (System.nanoTime() < deadline) {
      try {
        await(connector.commands().ping());
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RedisBusyException) {
          return;
        }
        throw e;
      }
    }
    throw new AssertionError("the server never answered BUSY");
  }

  @Test
  void run_killedNodeSwallowedThenHealsAfterRestart(@Fresh RedisStandalone redis) throws Exception {
    connect(redis);
    ScriptRunner quick = connector.scripts(QUICK);
    assertThat(await(quick.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(1L);

    redis.node().kill();
    RedisOutcome<Long> outcome = await(quick.run(INCR, ScriptOutputType.INTEGER, KEY));

    assertThat(outcome).isInstanceOf(RedisOutcome.Swallowed.class);
    RedisOutcome.Swallowed<Long> swallowed = (RedisOutcome.Swallowed<Long>) outcome;
    assertThat(swallowed.lastError().reason())
        .isIn(Set.of("disconnected", "not_connected", "connection"));
    assertThat(count(RedisMetrics.SWALLOWED, "operation", "incr")).isEqualTo(1);

    redis.node().restart();
    // The restarted server has no data and no scripts: INCR starts over, after a reload.
    Long value =
        awaitDone(Duration.ofSeconds(15), () -> quick.run(INCR, ScriptOutputType.INTEGER, KEY));
    assertThat(value).isEqualTo(1L);
    assertThat(count(RedisMetrics.RELOADS, "script", "incr")).isEqualTo(2);
  }

  @Test
  void run_pausedNodeTimesOutThenHealsAfterResume(@Fresh RedisStandalone redis) throws Exception {
    connect(uriOf(redis), Duration.ofMillis(200));
    ScriptRunner runner = connector.scripts(BEYOND_TIMEOUT);
    await(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

    redis.node().pause();
    try {
      RedisOutcome<Long> outcome = await(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

      assertThat(outcome).isInstanceOf(RedisOutcome.Swallowed.class);
      RedisOutcome.Swallowed<Long> swallowed = (RedisOutcome.Swallowed<Long>) outcome;
      assertThat(swallowed.lastError().reason()).isIn(Set.of("timeout", "deadline"));
      assertThat(count(RedisMetrics.RETRIES, "reason", "timeout")).isGreaterThanOrEqualTo(1);
    } finally {
      redis.node().resume();
    }

    // Attempts that timed out may still have run after the resume: INCR is not idempotent, our
    // index scripts are. So only check that calls succeed again.
    Long value =
        awaitDone(Duration.ofSeconds(10), () -> runner.run(INCR, ScriptOutputType.INTEGER, KEY));
    assertThat(value).isGreaterThanOrEqualTo(2L);
  }

  @Test
  void call_boundsItsCommandsWithItsOwnTimerAlone(@Fresh RedisStandalone redis) throws Exception {
    connect(uriOf(redis), Duration.ofMillis(200));
    RedisCalls calls = connector.calls(BEYOND_TIMEOUT);
    List<CompletableFuture<byte[]>> sent = new CopyOnWriteArrayList<>();

    redis.node().pause();
    try {
      CompletableFuture<byte[]> outside = connector.commands().get(KEY[0]).toCompletableFuture();
      RedisOutcome<byte[]> outcome =
          await(
              calls.call(
                  "get",
                  () -> {
                    CompletableFuture<byte[]> get =
                        connector.commands().get(KEY[0]).toCompletableFuture();
                    sent.add(get);
                    return get;
                  }));

      assertThat(outcome.isDone()).isFalse();
      assertThat(count(RedisMetrics.RETRIES, "reason", "timeout"))
          .as("each attempt timed out after the command timeout, and was tried again")
          .isGreaterThanOrEqualTo(1);
      assertThat(sent).hasSizeGreaterThanOrEqualTo(2);
      assertThat(sent)
          .as("lettuce put no timer of its own on an attempt's commands")
          .noneMatch(CompletableFuture::isDone);
      assertThat(failureOf(outside))
          .as("a command sent outside a call keeps lettuce's command timeout")
          .isInstanceOf(RedisCommandTimeoutException.class);
    } finally {
      redis.node().resume();
    }
  }

  @Test
  void run_routerBudgetHoldsAgainstPausedNode(@Fresh RedisStandalone redis) throws Exception {
    ScriptRunner router = connect(redis).scripts(RetryPolicy.router());
    await(router.run(INCR, ScriptOutputType.INTEGER, KEY));

    redis.node().pause();
    try {
      RedisOutcome<Long> outcome = await(router.run(INCR, ScriptOutputType.INTEGER, KEY));

      // The budget ended it ("deadline"), not the 2 s command timeout ("timeout").
      assertThat(outcome.isDone()).isFalse();
      assertThat(((RedisOutcome.Swallowed<Long>) outcome).lastError().reason())
          .isEqualTo("deadline");
    } finally {
      redis.node().resume();
    }
  }

  @Test
  void run_writeToReplicaSurfacesReadOnlyAfterRetries(
      RedisStandalone primary, @Fresh RedisStandalone replica) throws Exception {
    ScriptRunner runner = connect(replica).scripts(QUICK);
    await(connector.commands().replicaof(primary.uri().getHost(), primary.uri().getPort()));

    Throwable failure = failureOf(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

    assertThat(failure).isInstanceOf(RedisRealException.class).hasMessageContaining("primary");
    assertThat(((RedisRealException) failure).reason()).isEqualTo("readonly");
    assertThat(count(RedisMetrics.RETRIES, "reason", "readonly")).isGreaterThanOrEqualTo(1);
    assertThat(count(RedisMetrics.SWALLOWED, "operation", "incr")).isZero();
  }

  @Test
  void run_afterCloseFailsAsClosed(RedisStandalone redis) throws Exception {
    ScriptRunner runner = connect(redis).scripts(RetryPolicy.defaults());
    await(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

    connector.close();
    Throwable failure = failureOf(runner.run(INCR, ScriptOutputType.INTEGER, KEY));

    assertThat(failure).isInstanceOf(RedisRealException.class);
    assertThat(((RedisRealException) failure).reason())
        .as("%s", failure.getCause())
        .isEqualTo("closed");
  }

  @Test
  void connect_aclUserWithPassword(@Fresh RedisStandalone redis) throws Exception {
    try (RedisConnector admin = RedisConnector.connect(uriOf(redis))) {
      await(
          admin
              .commands()
              .aclSetuser(
                  "kvindex",
                  AclSetuserArgs.Builder.on()
                      .addPassword("s3cret")
                      .allKeys()
                      .allChannels()
                      .allCommands()));
    }
    String hostPort = redis.uri().getHost() + ":" + redis.uri().getPort();

    ScriptRunner runner =
        connect("redis://kvindex:s3cret@" + hostPort, Duration.ofSeconds(2))
            .scripts(RetryPolicy.defaults());
    assertThat(await(runner.<Long>run(INCR, ScriptOutputType.INTEGER, KEY)).orElseThrow())
        .isEqualTo(1L);

    assertThatThrownBy(() -> RedisConnector.connect("redis://kvindex:wrong@" + hostPort))
        .isInstanceOf(RedisRealException.class)
        .hasMessageContaining("wrongpass")
        .hasMessageNotContaining("wrong@");
  }

  @Test
  void connect_refusedIsUnavailable(@Fresh RedisStandalone redis) {
    String uri = uriOf(redis);
    redis.node().kill();

    assertThatThrownBy(() -> RedisConnector.connect(uri))
        .isInstanceOf(RedisUnavailableException.class)
        .hasMessageContaining("connect");
  }
}
