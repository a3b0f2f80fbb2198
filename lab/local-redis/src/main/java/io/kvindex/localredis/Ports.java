package io.kvindex.localredis;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/** Picks free loopback ports. Thread-safe. */
final class Ports {
  /** Highest client port whose cluster bus port (port + 10000) is still a valid port. */
  static final int MAX_CLUSTER_PORT = 55535;

  static final int BUS_PORT_OFFSET = 10000;

  private Ports() {}

  /**
   * Returns a port that is free on 127.0.0.1 right now; with {@code withBusPort}, also one whose
   * port + 10000 is free. Another process may still take it before redis binds: callers retry.
   */
  static int pickFree(boolean withBusPort) {
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = ephemeral();
      if (!withBusPort) {
        return port;
      }
      if (port <= MAX_CLUSTER_PORT && isFree(port + BUS_PORT_OFFSET)) {
        return port;
      }
    }
    throw new LocalRedisException(
        "no free loopback port pair (P, P+10000) found after 200 tries; free some ports");
  }

  private static int ephemeral() {
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new LocalRedisException("cannot bind any loopback port; is the network stack up?", e);
    }
  }

  static boolean isFree(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
