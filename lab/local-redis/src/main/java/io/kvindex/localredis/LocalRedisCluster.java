package io.kvindex.localredis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Redis Cluster of local redis-server processes on 127.0.0.1 (by default 3 primaries with 1
 * replica each), created without redis-cli: {@code CLUSTER MEET}, {@code ADDSLOTS}, {@code
 * REPLICATE}, then a wait until every node reports {@code cluster_state:ok} and every replica is
 * linked to its primary. Slots are split evenly over the primaries in node order.
 *
 * <pre>{@code
 * try (LocalRedisCluster cluster = LocalRedisCluster.start()) {
 *   RedisClusterClient client = RedisClusterClient.create(
 *       cluster.seedUris().stream().map(RedisURI::create).toList());
 * }
 * }</pre>
 *
 * <p>Nodes run with {@code cluster-node-timeout} 2000 ms, {@code repl-diskless-sync-delay 0} and
 * {@code cluster-replica-validity-factor 0} (a replica may always take over), besides the
 * standalone defaults of {@link LocalRedis}. Thread-safe.
 */
public interface LocalRedisCluster extends AutoCloseable {
  /** Starts 3 primaries with 1 replica each. */
  static LocalRedisCluster start() {
    return builder().start();
  }

  /** Returns a builder for another shape or other settings. */
  static Builder builder() {
    return new Builder();
  }

  /** The URIs of all nodes, in node order, as seeds for a cluster client. */
  List<URI> seedUris();

  /** All nodes: first the initial primaries, then their replicas grouped by primary. */
  List<ClusterNode> nodes();

  /** The running nodes whose current role is primary (asked of each node now). */
  List<ClusterNode> primaries();

  /** The running nodes whose current role is replica (asked of each node now). */
  List<ClusterNode> replicas();

  /** The node that serves {@code slot} now, as a running node reports it. */
  ClusterNode ownerOf(int slot);

  /**
   * Waits until every running, unpaused node reports {@code cluster_state:ok}, sees no running node
   * as failing, and every running replica is linked to its primary. Use it after a fault.
   */
  void awaitHealthy(Duration timeout);

  /**
   * Moves a hash slot and its keys from the primary serving it to {@code to}, another running
   * primary, as {@code redis-cli --cluster reshard} does: {@code CLUSTER SETSLOT IMPORTING} on the
   * target, {@code MIGRATING} on the source, {@code MIGRATE} of the slot's keys ten at a time (its
   * default pipeline) until none is left, then {@code SETSLOT NODE} on the target, the source and
   * every other primary. Meanwhile a command on keys of the slot is served where its keys are,
   * redirected with {@code ASK}, or refused with {@code TRYAGAIN} while its keys are on both sides.
   * Returns once every primary has been told; replicas and clients learn the new owner through
   * gossip and {@code MOVED}. Keys must be valid UTF-8 (this library speaks to Redis in text).
   *
   * @throws IllegalArgumentException if {@code to} is not a running primary of this cluster or
   *     already serves the slot
   */
  default SlotMigration migrateSlot(int slot, ClusterNode to) {
    return migrateSlot(slot, to, 10);
  }

  /**
   * As {@link #migrateSlot(int, ClusterNode)}, moving {@code keysPerMigrate} keys per {@code
   * MIGRATE}: 1 leaves the slot's keys split between the two nodes for longest, as a reshard of a
   * slot with many keys does.
   *
   * @throws IllegalArgumentException if {@code to} is not a running primary of this cluster or
   *     already serves the slot, or {@code keysPerMigrate} is below 1
   */
  default SlotMigration migrateSlot(int slot, ClusterNode to, int keysPerMigrate) {
    return migrateSlot(slot, to, keysPerMigrate, () -> {});
  }

  /**
   * As {@link #migrateSlot(int, ClusterNode, int)}, running {@code afterEachMigrate} after every
   * {@code MIGRATE} (before the next one, and after the last before {@code SETSLOT NODE}): a test
   * can wait there for its clients to act while the slot's keys are split between the two nodes.
   */
  SlotMigration migrateSlot(
      int slot, ClusterNode to, int keysPerMigrate, Runnable afterEachMigrate);

  /**
   * What one {@link #migrateSlot} did.
   *
   * @param keys keys moved
   * @param migrateCalls {@code MIGRATE} commands sent (each moves up to {@code keysPerMigrate}
   *     keys, and blocks both nodes while it serialises, sends and restores them)
   * @param longestMigrate the longest of them
   * @param took from {@code SETSLOT IMPORTING} to the last {@code SETSLOT NODE}
   */
  record SlotMigration(int keys, int migrateCalls, Duration longestMigrate, Duration took) {}

  /** Ends every process (SIGKILL) and deletes the temp directories. Idempotent. */
  @Override
  void close();

  /** Shape and settings of a {@link LocalRedisCluster}. Not thread-safe; build on one thread. */
  final class Builder {
    int primaries = 3;
    int replicasPerPrimary = 1;
    Duration nodeTimeout = Duration.ofMillis(2000);
    Duration startupTimeout = Duration.ofSeconds(30);
    final Map<String, String> settings = new LinkedHashMap<>();
    Path redisServer;

    Builder() {}

    /** Number of primaries, at least 3 (default 3). */
    public Builder primaries(int count) {
      if (count < 3) {
        throw new IllegalArgumentException("primaries must be at least 3, got " + count);
      }
      this.primaries = count;
      return this;
    }

    /** Replicas per primary, at least 0 (default 1). */
    public Builder replicasPerPrimary(int count) {
      if (count < 0) {
        throw new IllegalArgumentException("replicasPerPrimary must be >= 0, got " + count);
      }
      this.replicasPerPrimary = count;
      return this;
    }

    /** {@code cluster-node-timeout}: how long until a silent node counts as failed (2 s). */
    public Builder nodeTimeout(Duration timeout) {
      this.nodeTimeout = ServerConfig.checkPositive(timeout, "nodeTimeout");
      return this;
    }

    /** How long to wait for the whole cluster to become healthy (default 30 s). */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = ServerConfig.checkPositive(timeout, "startupTimeout");
      return this;
    }

    /** Adds a redis.conf directive for every node, as {@link LocalRedis.Builder#setting}. */
    public Builder setting(String name, String value) {
      settings.put(ServerConfig.checkSetting(name, value), value);
      return this;
    }

    /** Runs this binary instead of the one found by the usual search. */
    public Builder redisServer(Path binary) {
      this.redisServer = Objects.requireNonNull(binary, "binary");
      return this;
    }

    /** Starts the processes, forms the cluster and returns once it is healthy. */
    public LocalRedisCluster start() {
      return ProcessCluster.start(this);
    }
  }
}
