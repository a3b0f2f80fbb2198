package io.kvindex.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.localredis.RedisNode;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

@UsesRedis
class RedisExtensionTest {
  private static RedisClient client;

  @BeforeAll
  static void createClient() {
    client = RedisClient.create();
  }

  @AfterAll
  static void shutdownClient() {
    client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
  }

  private static StatefulRedisConnection<String, String> connect(RedisURI uri, Duration timeout) {
    uri.setTimeout(timeout);
    return client.connect(uri);
  }

  @RepeatedTest(2)
  void shared_isFlushedBeforeEachTest(RedisStandalone redis) {
    try (StatefulRedisConnection<String, String> conn =
        connect(redis.uri(), Duration.ofSeconds(2))) {
      RedisCommands<String, String> sync = conn.sync();
      assertThat(sync.ping()).isEqualTo("PONG");
      assertThat(sync.dbsize()).isZero();
      sync.set("left-behind", "by a test");
    }
    assertThat(redis.isCluster()).isFalse();
    assertThat(redis.uris()).containsExactly(redis.uri());
  }

  /** Private servers, skipped when the environment names external ones. */
  @Nested
  class FreshServers {
    private RedisStandalone freshFromBeforeEach;

    @BeforeEach
    void setUp(@Fresh RedisStandalone fresh) {
      this.freshFromBeforeEach = fresh;
    }

    @Test
    void fresh_isPrivateWithSettingsAndSameAsInBeforeEach(
        @Fresh(settings = "maxmemory 10mb") RedisStandalone fresh,
        @Fresh RedisStandalone plain,
        RedisStandalone shared) {
      assertThat(plain).isSameAs(freshFromBeforeEach);
      assertThat(fresh.uri().getPort()).isNotEqualTo(shared.uri().getPort());
      assertThat(plain.uri().getPort()).isNotIn(fresh.uri().getPort(), shared.uri().getPort());
      try (StatefulRedisConnection<String, String> conn =
          connect(fresh.uri(), Duration.ofSeconds(2))) {
        assertThat(conn.sync().configGet("maxmemory")).containsEntry("maxmemory", "10485760");
      }
    }

    @Test
    void kill_refusesConnections(@Fresh RedisStandalone redis) {
      redis.node().kill();
      assertThatThrownBy(() -> connect(redis.uri(), Duration.ofSeconds(1)).close())
          .isInstanceOf(RedisConnectionException.class);
    }

    @Test
    void pause_timesOutCommandsUntilResume(@Fresh RedisStandalone redis) {
      RedisNode node = redis.node();
      try (StatefulRedisConnection<String, String> conn =
          connect(redis.uri(), Duration.ofMillis(300))) {
        node.pause();
        assertThatThrownBy(() -> conn.sync().ping())
            .isInstanceOf(RedisCommandTimeoutException.class);
        node.resume();
        conn.setTimeout(Duration.ofSeconds(2));
        assertThat(conn.sync().set("k", "v")).isEqualTo("OK");
      }
    }

    @Test
    void restart_servesAgainOnSamePort(@Fresh RedisStandalone redis) {
      RedisNode node = redis.node();
      int port = node.port();
      node.kill();
      node.restart();
      assertThat(node.port()).isEqualTo(port);
      try (StatefulRedisConnection<String, String> conn =
          connect(redis.uri(), Duration.ofSeconds(2))) {
        assertThat(conn.sync().ping()).isEqualTo("PONG");
      }
    }
  }
}
