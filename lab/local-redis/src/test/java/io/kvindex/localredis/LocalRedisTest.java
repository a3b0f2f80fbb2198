package io.kvindex.localredis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class LocalRedisTest {
  private static RedisClient client;

  @BeforeAll
  static void createClient() {
    client = RedisClient.create();
  }

  @AfterAll
  static void shutdownClient() {
    client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
  }

  private static RedisURI uri(RedisNode node, Duration timeout) {
    RedisURI uri = RedisURI.create(node.uri());
    uri.setTimeout(timeout);
    return uri;
  }

  @Test
  void start_answersPingAndCloseLeavesNothing() {
    LocalRedis redis = LocalRedis.start();
    long pid = redis.pid();
    Path log = redis.logFile();
    try (StatefulRedisConnection<String, String> conn =
        client.connect(uri(redis, Duration.ofSeconds(2)))) {
      assertThat(conn.sync().ping()).isEqualTo("PONG");
      assertThat(redis.uri().toString()).isEqualTo("redis://127.0.0.1:" + redis.port());
      assertThat(conn.sync().configGet("save")).containsEntry("save", "");
    } finally {
      redis.close();
    }
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    assertThat(handle.map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
    assertThat(Files.exists(log.getParent())).isFalse();
    assertThat(redis.isRunning()).isFalse();
  }

  @Test
  void builder_settingReachesServer() {
    try (LocalRedis redis = LocalRedis.builder().setting("maxmemory", "10mb").start();
        StatefulRedisConnection<String, String> conn =
            client.connect(uri(redis, Duration.ofSeconds(2)))) {
      assertThat(conn.sync().configGet("maxmemory")).containsEntry("maxmemory", "10485760");
    }
  }

  @Test
  void builder_badSettingFailsWithLogTail() {
    LocalRedis.Builder builder = LocalRedis.builder().setting("maxmemory-policy", "no-such-policy");
    assertThatThrownBy(builder::start)
        .isInstanceOf(LocalRedisException.class)
        .hasMessageContaining("exited with code")
        .hasMessageContaining("maxmemory-policy")
        .hasMessageContaining("KVINDEX_REDIS_SERVER");
  }

  @Test
  void setting_reservedNameRejected() {
    assertThatThrownBy(() -> LocalRedis.builder().setting("port", "6379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("port");
  }

  @Test
  void kill_refusesConnectionsAndRestartServesSamePort() {
    try (LocalRedis redis = LocalRedis.start()) {
      int port = redis.port();
      long pid = redis.pid();
      redis.kill();
      assertThat(redis.isRunning()).isFalse();
      assertThatThrownBy(() -> client.connect(uri(redis, Duration.ofSeconds(1))).close())
          .isInstanceOf(RedisConnectionException.class);

      redis.restart();
      assertThat(redis.port()).isEqualTo(port);
      assertThat(redis.pid()).isNotEqualTo(pid);
      try (StatefulRedisConnection<String, String> conn =
          client.connect(uri(redis, Duration.ofSeconds(2)))) {
        assertThat(conn.sync().set("k", "v")).isEqualTo("OK");
        assertThat(conn.sync().get("k")).isEqualTo("v");
      }
    }
  }

  @Test
  void pause_timesOutCommandsUntilResume() {
    try (LocalRedis redis = LocalRedis.start();
        StatefulRedisConnection<String, String> conn =
            client.connect(uri(redis, Duration.ofMillis(300)))) {
      assertThat(conn.sync().ping()).isEqualTo("PONG");
      redis.pause();
      assertThat(redis.isPaused()).isTrue();
      assertThatThrownBy(() -> conn.sync().ping()).isInstanceOf(RedisCommandTimeoutException.class);
      redis.resume();
      conn.setTimeout(Duration.ofSeconds(2));
      assertThat(conn.sync().set("after", "resume")).isEqualTo("OK");
    }
  }

  @Test
  void clientPause_holdsCommandsForTheDuration() {
    try (LocalRedis redis = LocalRedis.start();
        StatefulRedisConnection<String, String> conn =
            client.connect(uri(redis, Duration.ofMillis(200)))) {
      redis.clientPause(Duration.ofSeconds(1));
      assertThatThrownBy(() -> conn.sync().set("k", "v"))
          .isInstanceOf(RedisCommandTimeoutException.class);
    }
  }

  @Test
  void stop_endsProcessCleanly() {
    try (LocalRedis redis = LocalRedis.start()) {
      redis.stop();
      assertThat(redis.isRunning()).isFalse();
      assertThat(Files.exists(redis.logFile())).isTrue();
    }
  }
}
