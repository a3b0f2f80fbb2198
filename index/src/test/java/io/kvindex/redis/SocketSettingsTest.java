package io.kvindex.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.epoll.Epoll;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * A Redis host that vanishes without a reset must be noticed in seconds, not after the kernel's 15
 * minutes: the connector's sockets, read back from the kernel, probe an idle peer and drop one that
 * leaves sent data unacknowledged.
 */
@UsesRedis
class SocketSettingsTest {

  @Test
  void connection_noticesASilentPeerWithinSeconds(RedisStandalone redis) {
    String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
    try (RedisConnector connector =
        RedisConnector.builder().uri(uri).meterRegistry(new SimpleMeterRegistry()).build()) {
      connector.commands().ping().toCompletableFuture().join();
      TcpSettings tcp = ((LettuceConnector) connector).lastSocket();

      assertThat(tcp.keepAlive()).isTrue();
      assertThat(tcp.keepAliveIdleSeconds()).isEqualTo(5);
      assertThat(tcp.keepAliveIntervalSeconds()).isEqualTo(2);
      assertThat(tcp.keepAliveProbes()).isEqualTo(3);
      if (shipsEpoll()) {
        assertThat(Epoll.isAvailable()).as("the native epoll transport loads").isTrue();
        assertThat(tcp.transport()).isEqualTo("epoll");
        assertThat(tcp.userTimeoutMillis()).isEqualTo(11_000);
      }
    }
  }

  /** Linux on x86-64 or arm64: the platforms whose native epoll library the project ships. */
  private static boolean shipsEpoll() {
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
    return os.contains("linux") && (arch.equals("amd64") || arch.equals("aarch64"));
  }
}
