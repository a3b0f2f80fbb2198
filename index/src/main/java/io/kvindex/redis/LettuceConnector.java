package io.kvindex.redis;

import io.kvindex.common.Check;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.MaintNotificationsConfig;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.event.connection.ConnectionActivatedEvent;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.EpollProvider;
import io.lettuce.core.resource.IOUringProvider;
import io.lettuce.core.resource.NettyCustomizer;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.epoll.Epoll;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;

/**
 * A {@link RedisConnector} on lettuce. Thread-safe.
 *
 * <p>A Redis host that vanishes without a reset (powered off, partitioned) leaves a connection that
 * looks open: the kernel retransmits unacknowledged commands for about 15 minutes before it gives
 * up, and never probes an idle one for two hours. So every connection probes an idle peer ({@link
 * #KEEPALIVE_IDLE}, {@link #KEEPALIVE_INTERVAL}, {@link #KEEPALIVE_PROBES}: dropped about 11 s
 * after the peer stops answering) and, on Netty's native epoll transport (shipped for Linux on
 * x86-64 and arm64), drops one whose sent data stays unacknowledged for {@link #TCP_USER_TIMEOUT};
 * lettuce then reconnects, which re-resolves a Sentinel's primary or a cluster's topology. On NIO
 * (other platforms, or a native library that cannot load) only the probes apply, and the connector
 * says so once at WARN.
 */
final class LettuceConnector implements RedisConnector {
  private static final Logger log = LoggerFactory.getLogger(LettuceConnector.class);

  /** Idle time before a connection's first keep-alive probe. */
  static final Duration KEEPALIVE_IDLE = Duration.ofSeconds(5);

  /** Time between keep-alive probes. */
  static final Duration KEEPALIVE_INTERVAL = Duration.ofSeconds(2);

  /** Unanswered keep-alive probes after which the connection is dropped. */
  static final int KEEPALIVE_PROBES = 3;

  /**
   * How long sent data may stay unacknowledged before the connection is dropped (native transport
   * only): as long as the keep-alive probes take, so both ways of going silent are noticed alike.
   * The kernel of a busy or paused Redis still acknowledges, so this never drops a slow server.
   */
  static final Duration TCP_USER_TIMEOUT =
      KEEPALIVE_IDLE.plus(KEEPALIVE_INTERVAL.multipliedBy(KEEPALIVE_PROBES));

  private static final AtomicBoolean SAID = new AtomicBoolean();

  private final boolean cluster;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private final ServingNodes nodes;
  private final Runnable closeClient;
  private final ClientResources resources;
  private final ScheduledExecutorService scheduler;
  private final RedisMetrics metrics;
  private final MeterRegistry meterRegistry;
  private final RedisErrorClassifier classifier;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicLong activations = new AtomicLong();
  private final Disposable activationWatch;
  private final Duration commandTimeout;
  private final AtomicReference<TcpSettings> lastSocket;

  private LettuceConnector(
      boolean cluster,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      ServingNodes nodes,
      Runnable closeClient,
      ClientResources resources,
      ScheduledExecutorService scheduler,
      AtomicReference<TcpSettings> lastSocket,
      RedisConnector.Builder settings) {
    this.lastSocket = lastSocket;
    this.cluster = cluster;
    this.commands = commands;
    this.nodes = nodes;
    this.closeClient = closeClient;
    this.resources = resources;
    this.scheduler = scheduler;
    this.commandTimeout = settings.commandTimeout;
    this.meterRegistry = settings.meterRegistry;
    this.metrics = new RedisMetrics(settings.meterRegistry);
    this.classifier = RedisErrorClassifier.of(settings.oomIsTemporary);
    this.activationWatch =
        resources
            .eventBus()
            .get()
            .filter(ConnectionActivatedEvent.class::isInstance)
            .subscribe(e -> activations.incrementAndGet());
  }

  static LettuceConnector open(RedisConnector.Builder settings) {
    RedisEndpoints endpoints = RedisEndpoints.parse(settings.uri, settings.commandTimeout);
    long start = System.nanoTime();
    AtomicReference<TcpSettings> lastSocket = new AtomicReference<>();
    ClientResources resources =
        ClientResources.builder()
            .reconnectDelay(
                Delay.exponential(
                    Duration.ofMillis(10), Duration.ofSeconds(2), 2, TimeUnit.MILLISECONDS))
            .nettyCustomizer(
                new NettyCustomizer() {
                  @Override
                  public void afterChannelInitialized(Channel channel) {
                    lastSocket.set(socketSettings(channel));
                  }
                })
            .build();
    ScheduledExecutorService scheduler = RedisCalls.newScheduler("kvindex-redis-scheduler");
    try {
      return endpoints.cluster()
          ? openCluster(endpoints, settings, resources, scheduler, lastSocket)
          : openStandalone(endpoints, settings, resources, scheduler, lastSocket);
    } catch (RuntimeException e) {
      scheduler.shutdown();
      resources.shutdown(0, 2, TimeUnit.SECONDS);
      throw connectFailure(settings, e, Duration.ofNanos(System.nanoTime() - start));
    }
  }

  private static LettuceConnector openStandalone(
      RedisEndpoints endpoints,
      RedisConnector.Builder settings,
      ClientResources resources,
      ScheduledExecutorService scheduler,
      AtomicReference<TcpSettings> lastSocket) {
    RedisClient client = RedisClient.create(resources);
    ClientOptions.Builder options =
        ClientOptions.builder()
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(settings.requestQueueSize)
            .timeoutOptions(timeoutOptions(settings))
            .socketOptions(socketOptions(settings))
            .maintNotificationsConfig(MaintNotificationsConfig.disabled());
    if (settings.tlsCaFile != null) {
      options.sslOptions(sslOptions(settings));
    }
    client.setOptions(options.build());
    try {
      RedisURI uri = endpoints.uris().get(0);
      StatefulRedisConnection<byte[], byte[]> connection =
          client.connect(ByteArrayCodec.INSTANCE, uri);
      return new LettuceConnector(
          false,
          connection.async(),
          ServingNodes.single(address(uri), connection.async()),
          closer(connection, client::shutdown),
          resources,
          scheduler,
          lastSocket,
          settings);
    } catch (RuntimeException e) {
      client.shutdown(0, 2, TimeUnit.SECONDS);
      throw e;
    }
  }

  private static LettuceConnector openCluster(
      RedisEndpoints endpoints,
      RedisConnector.Builder settings,
      ClientResources resources,
      ScheduledExecutorService scheduler,
      AtomicReference<TcpSettings> lastSocket) {
    RedisClusterClient client = RedisClusterClient.create(resources, endpoints.uris());
    ClusterClientOptions.Builder options =
        ClusterClientOptions.builder()
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(settings.requestQueueSize)
            .timeoutOptions(timeoutOptions(settings))
            .socketOptions(socketOptions(settings))
            .topologyRefreshOptions(
                ClusterTopologyRefreshOptions.builder()
                    // adaptive triggers (MOVED, ASK, reconnects, ...) are all on by default in 7.x
                    .enablePeriodicRefresh(settings.topologyRefreshPeriod)
                    .adaptiveRefreshTriggersTimeout(settings.adaptiveRefreshTimeout)
                    .build());
    options.maintNotificationsConfig(MaintNotificationsConfig.disabled());
    options.nodeFilter(LettuceConnector::inTopology);
    if (settings.tlsCaFile != null) {
      options.sslOptions(sslOptions(settings));
    }
    client.setOptions(options.build());
    try {
      StatefulRedisClusterConnection<byte[], byte[]> connection =
          client.connect(ByteArrayCodec.INSTANCE);
      return new LettuceConnector(
          true,
          connection.async(),
          ServingNodes.cluster(client, connection),
          closer(connection, client::shutdown),
          resources,
          scheduler,
          lastSocket,
          settings);
    } catch (RuntimeException e) {
      client.shutdown(0, 2, TimeUnit.SECONDS);
      throw e;
    }
  }

  /**
   * Whether a node stays in the client's topology: not one flagged failed (or without an address)
   * that serves no slots, which is what a primary lost for good becomes once its replica has taken
   * its slots, or a lost replica. The cluster keeps such a node in its node list until it is
   * forgotten; left in the topology, lettuce would keep reconnecting to it for as long as it stays
   * dead, and every failed reconnect triggers another topology refresh (one every second or two).
   * Each periodic refresh still tries it once: lettuce finds it in the live nodes' lists. A failed
   * primary that still owns slots stays: nothing else serves them.
   */
  private static boolean inTopology(RedisClusterNode node) {
    boolean lost =
        node.is(RedisClusterNode.NodeFlag.FAIL) || node.is(RedisClusterNode.NodeFlag.NOADDR);
    return !(lost && node.hasNoSlots());
  }

  /** Where a server is, for messages: host:port, or the name its Sentinels know it by. */
  private static String address(RedisURI uri) {
    return uri.getSentinels().isEmpty()
        ? uri.getHost() + ":" + uri.getPort()
        : "the primary Sentinel names '" + uri.getSentinelMasterId() + "'";
  }

  /**
   * Lettuce times out every command after the command timeout, except those a kvindex call's
   * attempt dispatches: that attempt's own timer bounds them (by the same timeout, or sooner by the
   * call's budget), so they need no second timer.
   */
  private static TimeoutOptions timeoutOptions(RedisConnector.Builder settings) {
    long nanos = settings.commandTimeout.toNanos();
    return TimeoutOptions.builder()
        .timeoutCommands()
        .timeoutSource(
            new TimeoutOptions.TimeoutSource() {
              @Override
              public long getTimeout(RedisCommand<?, ?, ?> command) {
                return ResilientRedisCalls.boundByCaller() ? 0 : nanos;
              }

              @Override
              public TimeUnit getTimeUnit() {
                return TimeUnit.NANOSECONDS;
              }
            })
        .build();
  }

  private static SocketOptions socketOptions(RedisConnector.Builder settings) {
    SocketOptions.Builder options =
        SocketOptions.builder()
            .connectTimeout(settings.commandTimeout)
            .keepAlive(
                SocketOptions.KeepAliveOptions.builder()
                    .enable()
                    .idle(KEEPALIVE_IDLE)
                    .interval(KEEPALIVE_INTERVAL)
                    .count(KEEPALIVE_PROBES)
                    .build())
            .tcpNoDelay(true);
    if (EpollProvider.isAvailable() || IOUringProvider.isAvailable()) {
      // Lettuce refuses to connect if asked for it without a native transport.
      options.tcpUserTimeout(
          SocketOptions.TcpUserTimeoutOptions.builder()
              .enable()
              .tcpUserTimeout(TCP_USER_TIMEOUT)
              .build());
    }
    return options.build();
  }

  /** Reads a new connection's socket settings back, and says once per process what they are. */
  private static TcpSettings socketSettings(Channel channel) {
    TcpSettings tcp = TcpSettings.of(channel);
    if (SAID.compareAndSet(false, true)) {
      if (tcp.userTimeoutMillis() > 0) {
        log.debug("Redis connections: {}", tcp);
      } else {
        log.warn(
            "Redis connections: {}: a Redis host that vanishes without a reset while a command"
                + " waits is noticed only by the kernel's retransmission limit (about 15 minutes);"
                + " TCP_USER_TIMEOUT needs Netty's native epoll transport, which did not load here"
                + " ({})",
            tcp,
            Epoll.isAvailable()
                ? "epoll loaded, yet not used"
                : String.valueOf(Epoll.unavailabilityCause()));
      }
    }
    return tcp;
  }

  /** The socket settings of the last connection this connector opened, as the kernel holds them. */
  TcpSettings lastSocket() {
    return lastSocket.get();
  }

  /** Trusts the configured CA file instead of the JVM's default trust store. */
  private static SslOptions sslOptions(RedisConnector.Builder settings) {
    return SslOptions.builder().jdkSslProvider().trustManager(settings.tlsCaFile.toFile()).build();
  }

  private static Runnable closer(StatefulConnection<?, ?> connection, Runnable shutdownClient) {
    return () -> {
      connection.close();
      shutdownClient.run();
    };
  }

  /** A connect failure as a typed exception; a refused login is real, not temporary. */
  private static RuntimeException connectFailure(
      RedisConnector.Builder settings, RuntimeException e, Duration elapsed) {
    if (e instanceof IllegalArgumentException) {
      return e;
    }
    RedisErrorClassifier classifier = RedisErrorClassifier.of(settings.oomIsTemporary);
    Throwable reply = e;
    while (reply != null && !(reply instanceof RedisCommandExecutionException)) {
      reply = reply.getCause();
    }
    ClassifiedError error = classifier.classify(reply != null ? reply : e);
    String operation = "connect " + RedisEndpoints.masked(settings.uri);
    return error.isTemporary()
        ? new RedisUnavailableException(operation, error, 1, elapsed)
        : ResilientRedisCalls.typed(operation, error);
  }

  @Override
  public RedisClusterAsyncCommands<byte[], byte[]> commands() {
    return commands;
  }

  @Override
  public boolean isCluster() {
    return cluster;
  }

  @Override
  public CompletionStage<List<Node>> primaries() {
    return nodes.primaries();
  }

  @Override
  public long activations() {
    return activations.get();
  }

  @Override
  public RedisCalls calls(RetryPolicy policy) {
    return new ResilientRedisCalls(
        Check.notNull(policy, "policy"), scheduler, metrics, classifier, commandTimeout);
  }

  @Override
  public ScriptRunner scripts(RetryPolicy policy, boolean loadsScripts) {
    return new EvalShaScriptRunner(
        commands,
        () ->
            nodes.reachable().thenApply(List::<RedisScriptingAsyncCommands<byte[], byte[]>>copyOf),
        calls(policy),
        metrics,
        loadsScripts);
  }

  @Override
  public MeterRegistry meterRegistry() {
    return meterRegistry;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      scheduler.shutdown(); // first: calls from now on fail as "closed"
      activationWatch.dispose();
      try {
        closeClient.run();
      } finally {
        resources.shutdown(0, 2, TimeUnit.SECONDS);
      }
    }
  }
}
