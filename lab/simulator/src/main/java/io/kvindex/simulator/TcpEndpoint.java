package io.kvindex.simulator;

import java.util.Objects;

/** A {@code tcp://host:port} endpoint string: its check and its port. Thread-safe (stateless). */
final class TcpEndpoint {
  private TcpEndpoint() {}

  /** {@code endpoint}, checked to be {@code tcp://host:port}; {@code name} names the setting. */
  static String check(String endpoint, String name) {
    Objects.requireNonNull(endpoint, name);
    if (!endpoint.startsWith("tcp://") || endpoint.lastIndexOf(':') < "tcp://".length()) {
      throw new IllegalArgumentException(
          name + " must look like tcp://host:port (port 0 = any free port), got " + endpoint);
    }
    port(endpoint);
    return endpoint;
  }

  /** The port of a {@code tcp://host:port} endpoint. */
  static int port(String endpoint) {
    String digits = endpoint.substring(endpoint.lastIndexOf(':') + 1);
    try {
      int port = Integer.parseInt(digits);
      if (port < 0 || port > 65535) {
        throw new NumberFormatException();
      }
      return port;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("bad port in endpoint " + endpoint, e);
    }
  }

  /** {@code tcp://host:port} with the port replaced. */
  static String withPort(String endpoint, int port) {
    return endpoint.substring(0, endpoint.lastIndexOf(':') + 1) + port;
  }
}
