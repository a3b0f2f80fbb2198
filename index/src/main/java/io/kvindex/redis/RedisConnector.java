package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * One connection to a Redis server or Redis Cluster, with binary keys and values, shared by every
 * caller (lettuce pipelines concurrent commands on it), plus the {@link RedisCalls} and {@link
 * ScriptRunner}s that use it. Owns its lettuce client, client resources and one scheduler thread
 * ({@code kvindex-redis-scheduler}); {@link #close()} releases all of them.
 *
 * <p>URI forms:
 *
 * <ul>
 *   <li>{@code redis://[[user:]password@]host:port[/db]}: one server; {@code rediss://} for TLS.
 *   <li>{@code redis-cluster://[[user:]password@]host1:port1,host2:port2}: a cluster from seed
 *       nodes (any subset of its nodes); {@code rediss-cluster://} for TLS. A comma-separated list
 *       of {@code redis://} URIs means the same.
 *   <li>{@code redis-sentinel://[[user:]password@]host1:port1[,host2:port2][/db]#master} (or {@code
 *       ?sentinelMasterId=master}): the primary a set of Sentinels names, asked again on every
 *       reconnect, so a promoted replica is found after a failover; {@code rediss-sentinel://} for
 *       TLS. The password is the data nodes'; {@code ?sentinelPassword=...} (percent-encoded) is
 *       the sentinels' own, if they need one.
 * </ul>
 *
 * <p>Passwords in user info are percent-encoded where they contain {@code /}, {@code @}, {@code :}
 * or {@code ,}. No message or log line of this package shows a password: see {@link #masked}.
 *
 * <p>Client settings: the command timeout (default 2 s) also bounds connecting and cluster topology
 * refreshes; commands are rejected at once while disconnected (so {@link RedisCalls} retries them
 * with backoff instead of lettuce buffering and replaying them), with at most {@code
 * requestQueueSize} (default 10 000) queued per connection; TCP keepalive on; reconnect delay
 * exponential from 10 ms to 2 s; cluster topology refreshed every 30 s and on MOVED/ASK/reconnect
 * triggers, at most once a second, leaving out a node flagged failed (or without an address) that
 * serves no slots.
 *
 * <p>Thread-safe.
 */
public interface RedisConnector extends AutoCloseable {

  /** Connects with default settings; see {@link Builder}. */
  static RedisConnector connect(String uri) {
    return builder().uri(uri).build();
  }

  /**
   * {@code text} with the password of every Redis URI in it replaced by {@code ***} (user info up
   * to its last {@code @}, and {@code ...password=} query parameters), for messages, logs and
   * {@code toString}. Null stays null.
   */
  static String masked(String text) {
    return RedisEndpoints.masked(text);
  }

  /** A builder; {@link Builder#uri} is required. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * The shared binary command handle, for scripts and plain key commands. On a cluster it routes
   * each command by its first key.
   */
  RedisClusterAsyncCommands<byte[], byte[]> commands();

  /** True if connected to a Redis Cluster. */
  boolean isCluster();

  /**
   * The primaries that hold the data now, each with a connection of its own, for the commands a
   * cluster does not route by key (SCAN, FLUSHALL). On a cluster the topology is read again first
   * and every primary that owns slots in it is listed, never a primary a failover has replaced: a
   * cluster keeps such a node in its node list (failed, without slots) until it is forgotten, and
   * lettuce's own cluster-wide SCAN and FLUSHALL still ask it. Otherwise the one server.
   *
   * @return the primaries, in the topology's order; fails with lettuce's exception (a temporary
   *     error, for {@link RedisCalls}) when the topology cannot be read or a primary that owns
   *     slots cannot be connected to
   */
  CompletionStage<List<Node>> primaries();

  /**
   * One node and a connection to it, owned by the connector (closed with it). Immutable.
   *
   * @param address where it is, for messages: {@code host:port}, or for a primary found through
   *     Sentinel the name its Sentinels know it by
   * @param commands the node's own connection: every command goes to this node
   */
  record Node(String address, RedisClusterAsyncCommands<byte[], byte[]> commands) {}

  /**
   * How many times a connection of this connector became active (the first connection, and every
   * reconnect, to any node): a change means later replies may come from another server, one that a
   * failover promoted.
   */
  long activations();

  /**
   * Calls on this connection under {@code policy}, with this connector's metrics and classifier.
   */
  RedisCalls calls(RetryPolicy policy);

  /**
   * A script runner on this connection retrying under {@code policy}, which loads scripts (EVAL on
   * NOSCRIPT, SCRIPT LOAD): a writer's.
   */
  default ScriptRunner scripts(RetryPolicy policy) {
    return scripts(policy, true);
  }

  /**
   * A script runner on this connection retrying under {@code policy}; one that does not load
   * scripts sends EVALSHA and EVALSHA_RO only (see {@link ScriptRunner}): a router's.
   */
  ScriptRunner scripts(RetryPolicy policy, boolean loadsScripts);

  /** Where this connector's meters go; an index built on it registers its own there too. */
  MeterRegistry meterRegistry();

  /** Closes the connection, the client, its resources and the scheduler. Idempotent. */
  @Override
  void close();

  /** Builds a {@link RedisConnector}; checks each argument at once. Not thread-safe. */
  final class Builder {
    String uri;
    Duration commandTimeout = Duration.ofSeconds(2);
    int requestQueueSize = 10_000;
    Duration topologyRefreshPeriod = Duration.ofSeconds(30);
    Duration adaptiveRefreshTimeout = Duration.ofSeconds(1);
    MeterRegistry meterRegistry = Metrics.globalRegistry;
    boolean oomIsTemporary;
    Path tlsCaFile;

    private Builder() {}

    /** Where Redis is; see {@link RedisConnector} for the forms. Required. */
    public Builder uri(String uri) {
      this.uri = Check.notBlank(uri, "uri");
      return this;
    }

    /** Command, connect and topology-refresh timeout. Default 2 s. */
    public Builder commandTimeout(Duration commandTimeout) {
      this.commandTimeout = Check.atLeastOneMilli(commandTimeout, "commandTimeout");
      return this;
    }

    /** Commands queued per connection before new ones are rejected. Default 10 000. */
    public Builder requestQueueSize(int requestQueueSize) {
      this.requestQueueSize = Check.atLeast(requestQueueSize, 1, "requestQueueSize");
      return this;
    }

    /** Cluster only: how often the client re-reads the topology. Default 30 s. */
    public Builder topologyRefreshPeriod(Duration topologyRefreshPeriod) {
      this.topologyRefreshPeriod = Check.positive(topologyRefreshPeriod, "topologyRefreshPeriod");
      return this;
    }

    /** Cluster only: least time between two refreshes triggered by MOVED etc. Default 1 s. */
    public Builder adaptiveRefreshTimeout(Duration adaptiveRefreshTimeout) {
      this.adaptiveRefreshTimeout =
          Check.positive(adaptiveRefreshTimeout, "adaptiveRefreshTimeout");
      return this;
    }

    /**
     * For {@code rediss} URIs: trust the CA certificates (PEM) in this file instead of the JVM's
     * default trust store ({@code javax.net.ssl.trustStore}). Default none. Checked to be a
     * readable file here; its content is read when connecting.
     */
    public Builder tlsCaFile(Path tlsCaFile) {
      Check.notNull(tlsCaFile, "tlsCaFile");
      if (!Files.isRegularFile(tlsCaFile) || !Files.isReadable(tlsCaFile)) {
        throw new IllegalArgumentException(
            "tlsCaFile "
                + tlsCaFile
                + " is not a readable file; give a PEM file of CA certificates");
      }
      this.tlsCaFile = tlsCaFile;
      return this;
    }

    /** Where the counters go. Default {@link Metrics#globalRegistry}. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meterRegistry = Check.notNull(meterRegistry, "meterRegistry");
      return this;
    }

    /**
     * Treat OOM as temporary (retry, then swallow) instead of a real capacity error. Only for an
     * evicting cache deployment; default false, as the index needs {@code noeviction}.
     */
    public Builder oomIsTemporary(boolean oomIsTemporary) {
      this.oomIsTemporary = oomIsTemporary;
      return this;
    }

    /**
     * Connects.
     *
     * @throws IllegalArgumentException if the URI is malformed (the message masks its password)
     * @throws RedisUnavailableException if Redis cannot be reached
     * @throws RedisRealException if Redis refuses the connection (for example a wrong password)
     */
    public RedisConnector build() {
      Check.notNull(uri, "uri");
      return LettuceConnector.open(this);
    }
  }
}
