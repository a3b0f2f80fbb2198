package io.kvindex.localredis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.net.SocketFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A standalone redis-server process on a free 127.0.0.1 port, started by this JVM and ended by
 * {@link #close()} or, at the latest, when the JVM exits.
 *
 * <pre>{@code
 * try (LocalRedis redis = LocalRedis.builder().setting("maxmemory", "64mb").start()) {
 *   RedisClient client = RedisClient.create(redis.uri().toString());
 * }
 * }</pre>
 *
 * <p>The binary is {@code $KVINDEX_REDIS_SERVER}, else {@code redis-server} on the {@code PATH},
 * else the Redis 7.0.15 binary shipped in {@code org.signal:embedded-redis}. The server runs with
 * {@code --save "" --appendonly no --enable-debug-command local} and logs to {@link #logFile()}.
 *
 * <p>Thread-safe, like {@link RedisNode}.
 */
public interface LocalRedis extends RedisNode, AutoCloseable {
  /** Starts a server with default settings. */
  static LocalRedis start() {
    return builder().start();
  }

  /** Returns a builder for a server with extra settings. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * Whether a redis-server binary can be found here ({@code $KVINDEX_REDIS_SERVER}, the {@code
   * PATH}, or the embedded one for this platform); {@code false} means {@link #start()} would fail.
   */
  static boolean binaryAvailable() {
    try {
      RedisBinary.locate();
      return true;
    } catch (LocalRedisException e) {
      return false;
    }
  }

  /** Ends the process (SIGKILL) and deletes its temp directory. Idempotent. */
  @Override
  void close();

  /**
   * PEM files of a TLS server: its certificate (chain), its private key and the CA certificates
   * clients check it against. Immutable.
   */
  record TlsFiles(Path certificate, Path key, Path caCertificates) {
    public TlsFiles {
      Objects.requireNonNull(certificate, "certificate");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(caCertificates, "caCertificates");
    }

    /** Sockets that trust {@link #caCertificates()}, for this library's control commands. */
    SocketFactory sockets() {
      try (InputStream in = Files.newInputStream(caCertificates)) {
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        int i = 0;
        for (Certificate ca : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
          trusted.setCertificateEntry("ca-" + i++, ca);
        }
        TrustManagerFactory trust =
            TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context.getSocketFactory();
      } catch (IOException | GeneralSecurityException e) {
        throw new LocalRedisException("cannot read the CA certificates " + caCertificates, e);
      }
    }
  }

  /** Settings of a {@link LocalRedis}. Not thread-safe; build on one thread. */
  final class Builder {
    private final Map<String, String> settings = new LinkedHashMap<>();
    private Duration startupTimeout = ServerConfig.DEFAULT_STARTUP_TIMEOUT;
    private Path redisServer;
    private TlsFiles tls;

    Builder() {}

    /**
     * Adds a redis.conf directive passed as {@code --name value}, such as {@code ("maxmemory",
     * "64mb")}; a later call with the same name replaces the value. Port, bind, dir, logfile and
     * daemonize are managed here and rejected.
     */
    public Builder setting(String name, String value) {
      settings.put(ServerConfig.checkSetting(name, value), value);
      return this;
    }

    /** How long to wait for the server to answer PING (default 15 s). */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = ServerConfig.checkPositive(timeout, "startupTimeout");
      return this;
    }

    /** Runs this binary instead of the one found by the usual search. */
    public Builder redisServer(Path binary) {
      this.redisServer = Objects.requireNonNull(binary, "binary");
      return this;
    }

    /**
     * Serves TLS only ({@code port 0}, {@code tls-port} on the free port, {@code tls-auth-clients
     * no}); {@link #uri()} is then {@code rediss://}. The binary must be built with TLS: the
     * embedded one and Debian's are.
     */
    public Builder tls(TlsFiles files) {
      this.tls = Objects.requireNonNull(files, "files");
      return this;
    }

    /** Starts the server and returns once it answers PING. */
    public LocalRedis start() {
      Path binary = redisServer != null ? redisServer : RedisBinary.locate();
      return RedisProcess.start(new ServerConfig(binary, startupTimeout, settings, List.of(), tls));
    }
  }
}
