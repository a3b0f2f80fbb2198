package io.kvindex.redis;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.epoll.EpollSocketChannelConfig;
import io.netty.channel.socket.nio.NioChannelOption;
import java.net.SocketOption;
import jdk.net.ExtendedSocketOptions;

/**
 * How a Redis connection's socket notices a peer that went away without a reset, as the kernel
 * holds it (read back from the socket, not from what was asked). Immutable, thread-safe.
 *
 * @param transport {@code epoll} (Netty's native transport) or {@code nio}
 * @param keepAlive whether TCP keep-alive probes are on
 * @param keepAliveIdleSeconds idle time before the first probe (-1: not known)
 * @param keepAliveIntervalSeconds time between probes (-1: not known)
 * @param keepAliveProbes unanswered probes before the connection is dropped (-1: not known)
 * @param userTimeoutMillis how long sent data may stay unacknowledged before the connection is
 *     dropped ({@code TCP_USER_TIMEOUT}; 0: the kernel's retransmission limit, about 15 minutes;
 *     -1: not known, as on NIO, which cannot set it)
 */
record TcpSettings(
    String transport,
    boolean keepAlive,
    int keepAliveIdleSeconds,
    int keepAliveIntervalSeconds,
    int keepAliveProbes,
    int userTimeoutMillis) {

  /** The settings of {@code channel}'s socket. */
  static TcpSettings of(Channel channel) {
    boolean keepAlive = Boolean.TRUE.equals(channel.config().getOption(ChannelOption.SO_KEEPALIVE));
    if (channel instanceof EpollSocketChannel epoll) {
      EpollSocketChannelConfig c = epoll.config();
      return new TcpSettings(
          "epoll",
          keepAlive,
          c.getTcpKeepIdle(),
          c.getTcpKeepIntvl(),
          c.getTcpKeepCnt(),
          c.getTcpUserTimeout());
    }
    return new TcpSettings(
        "nio",
        keepAlive,
        nio(channel, ExtendedSocketOptions.TCP_KEEPIDLE),
        nio(channel, ExtendedSocketOptions.TCP_KEEPINTERVAL),
        nio(channel, ExtendedSocketOptions.TCP_KEEPCOUNT),
        -1);
  }

  private static int nio(Channel channel, SocketOption<Integer> option) {
    try {
      Integer v = channel.config().getOption(NioChannelOption.of(option));
      return v == null ? -1 : v;
    } catch (RuntimeException e) {
      return -1; // not a NIO socket channel, or the platform does not have the option
    }
  }

  @Override
  public String toString() {
    String probes =
        keepAlive
            ? "keep-alive probes after "
                + keepAliveIdleSeconds
                + " s idle, every "
                + keepAliveIntervalSeconds
                + " s, "
                + keepAliveProbes
                + " unanswered to drop it"
            : "no keep-alive probes";
    String user =
        userTimeoutMillis > 0
            ? "TCP_USER_TIMEOUT " + userTimeoutMillis + " ms"
            : "no TCP_USER_TIMEOUT";
    return transport + " transport, " + probes + ", " + user;
  }
}
