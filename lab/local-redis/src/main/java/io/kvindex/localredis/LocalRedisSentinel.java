package io.kvindex.localredis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Sentinel-monitored primary with replicas, all local redis-server processes on 127.0.0.1: by
 * default 1 primary, 1 replica and 1 Sentinel (quorum 1) that declares the primary down after 1 s
 * and promotes the replica. Returns from {@link Builder#start()} once every replica is linked and
 * every Sentinel knows the replicas and its peers and can authorise a failover.
 *
 * <pre>{@code
 * try (LocalRedisSentinel set = LocalRedisSentinel.start()) {
 *   RedisClient client = RedisClient.create(set.uri().toString()); // redis-sentinel://...#kvindex
 *   RedisNode old = set.primary();
 *   old.kill();
 *   RedisNode promoted = set.awaitPrimaryOtherThan(old, Duration.ofSeconds(30));
 * }
 * }</pre>
 *
 * <p>Thread-safe, like {@link RedisNode}.
 */
public interface LocalRedisSentinel extends AutoCloseable {
  /** Starts 1 primary, 1 replica and 1 Sentinel. */
  static LocalRedisSentinel start() {
    return builder().start();
  }

  /** Returns a builder for another shape or other settings. */
  static Builder builder() {
    return new Builder();
  }

  /** The name the Sentinels monitor the primary under. */
  String masterName();

  /** {@code redis-sentinel://127.0.0.1:<s1>[,127.0.0.1:<s2>...]#<masterName>}. */
  URI uri();

  /** The data nodes: the initial primary first, then the replicas. */
  List<RedisNode> dataNodes();

  /** The Sentinel processes. */
  List<RedisNode> sentinels();

  /** The data node the running Sentinels name as primary now. */
  RedisNode primary();

  /**
   * Waits until every running Sentinel names a primary other than {@code old}, that node reports
   * the primary role, and returns it. Use it after killing or pausing the primary, or after {@link
   * #failover()}.
   */
  RedisNode awaitPrimaryOtherThan(RedisNode old, Duration timeout);

  /** Asks a Sentinel to fail over now ({@code SENTINEL FAILOVER}), without any node down. */
  void failover();

  /** Waits until every running replica has received all the primary has written so far. */
  void awaitReplicated(Duration timeout);

  /** Ends every process (SIGKILL) and deletes the temp directories. Idempotent. */
  @Override
  void close();

  /** Shape and settings of a {@link LocalRedisSentinel}. Not thread-safe; build on one thread. */
  final class Builder {
    int replicas = 1;
    int sentinels = 1;
    String masterName = "kvindex";
    Duration downAfter = Duration.ofSeconds(1);
    Duration startupTimeout = Duration.ofSeconds(30);
    final Map<String, String> settings = new LinkedHashMap<>();
    Path redisServer;

    Builder() {}

    /** Replicas of the primary, at least 1 (default 1). */
    public Builder replicas(int count) {
      if (count < 1) {
        throw new IllegalArgumentException("replicas must be at least 1, got " + count);
      }
      this.replicas = count;
      return this;
    }

    /** Sentinels, 1 or more (default 1); the quorum is a majority of them. */
    public Builder sentinels(int count) {
      if (count < 1) {
        throw new IllegalArgumentException("sentinels must be at least 1, got " + count);
      }
      this.sentinels = count;
      return this;
    }

    /** The monitored name, as in {@code #kvindex} (default {@code kvindex}). */
    public Builder masterName(String name) {
      if (name == null || !name.matches("[A-Za-z0-9._-]+")) {
        throw new IllegalArgumentException("masterName must be [A-Za-z0-9._-]+, got " + name);
      }
      this.masterName = name;
      return this;
    }

    /** {@code down-after-milliseconds}: how long a silent primary counts as up (default 1 s). */
    public Builder downAfter(Duration downAfter) {
      this.downAfter = ServerConfig.checkPositive(downAfter, "downAfter");
      return this;
    }

    /** How long to wait for the whole set to be ready (default 30 s). */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = ServerConfig.checkPositive(timeout, "startupTimeout");
      return this;
    }

    /** Adds a redis.conf directive for every data node, as {@link LocalRedis.Builder#setting}. */
    public Builder setting(String name, String value) {
      settings.put(ServerConfig.checkSetting(name, value), value);
      return this;
    }

    /** Runs this binary instead of the one found by the usual search. */
    public Builder redisServer(Path binary) {
      this.redisServer = Objects.requireNonNull(binary, "binary");
      return this;
    }

    /** Starts the processes and returns once a failover could happen. */
    public LocalRedisSentinel start() {
      return ProcessSentinel.start(this);
    }
  }
}
