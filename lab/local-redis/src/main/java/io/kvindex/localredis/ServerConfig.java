package io.kvindex.localredis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import javax.net.SocketFactory;

/**
 * Immutable settings of one redis-server process: the binary, the startup timeout, the extra
 * configuration directives and, for a Sentinel, the lines of its configuration file (a Sentinel
 * needs a file it can rewrite). Thread-safe.
 *
 * @param sentinelConfig the Sentinel's {@code sentinel ...} lines, or empty for a data node
 * @param tls the server's certificate, key and CA for a TLS-only server, or null
 */
record ServerConfig(
    Path binary,
    Duration startupTimeout,
    Map<String, String> settings,
    List<String> sentinelConfig,
    LocalRedis.TlsFiles tls) {
  static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(15);

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");
  private static final Set<String> RESERVED =
      Set.of(
          "port",
          "tls-port",
          "bind",
          "dir",
          "daemonize",
          "logfile",
          "cluster-config-file",
          "include");

  ServerConfig {
    Objects.requireNonNull(binary, "binary");
    Objects.requireNonNull(startupTimeout, "startupTimeout");
    settings = Collections.unmodifiableMap(new LinkedHashMap<>(settings));
    sentinelConfig = List.copyOf(sentinelConfig);
  }

  /** A data node's settings. */
  ServerConfig(Path binary, Duration startupTimeout, Map<String, String> settings) {
    this(binary, startupTimeout, settings, List.of(), null);
  }

  /** A Sentinel's settings. */
  ServerConfig(
      Path binary, Duration startupTimeout, Map<String, String> settings, List<String> sentinel) {
    this(binary, startupTimeout, settings, sentinel, null);
  }

  /** Plain sockets, or TLS ones trusting the server's CA (no host name check: loopback only). */
  SocketFactory sockets() {
    return tls == null ? SocketFactory.getDefault() : tls.sockets();
  }

  /** Whether the process runs as a Sentinel ({@code redis-server <file> --sentinel}). */
  boolean sentinel() {
    return !sentinelConfig.isEmpty();
  }

  /** The file a Sentinel reads its monitors from and rewrites, in its directory. */
  static Path sentinelFile(Path dir) {
    return dir.resolve("sentinel.conf");
  }

  /** Checks a directive name and value given by a caller; returns the name. */
  static String checkSetting(String name, String value) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(value, "value");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "setting name '" + name + "' is not a redis.conf directive (lower case, like maxmemory)");
    }
    if (RESERVED.contains(name)) {
      throw new IllegalArgumentException(
          "setting '" + name + "' is managed by local-redis and cannot be set");
    }
    return name;
  }

  static Duration checkPositive(Duration duration, String name) {
    Objects.requireNonNull(duration, name);
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + duration);
    }
    return duration;
  }

  /** The command line for a server on {@code port} keeping its files in {@code dir}. */
  List<String> command(int port, Path dir) {
    Map<String, String> all = new LinkedHashMap<>();
    if (tls == null) {
      all.put("port", Integer.toString(port));
    } else {
      all.put("port", "0");
      all.put("tls-port", Integer.toString(port));
      all.put("tls-cert-file", tls.certificate().toString());
      all.put("tls-key-file", tls.key().toString());
      all.put("tls-ca-cert-file", tls.caCertificates().toString());
      all.put("tls-auth-clients", "no");
    }
    all.put("bind", "127.0.0.1");
    all.put("daemonize", "no");
    all.put("dir", dir.toString());
    if (!sentinel()) {
      all.put("save", "");
      all.put("appendonly", "no");
      all.put("enable-debug-command", "local");
    }
    all.putAll(settings);
    List<String> command = new ArrayList<>();
    command.add(binary.toString());
    if (sentinel()) {
      command.add(sentinelFile(dir).toString());
      command.add("--sentinel");
    }
    all.forEach(
        (name, value) -> {
          command.add("--" + name);
          command.add(value);
        });
    return command;
  }

  boolean clusterEnabled() {
    return "yes".equalsIgnoreCase(settings.get("cluster-enabled"));
  }
}
