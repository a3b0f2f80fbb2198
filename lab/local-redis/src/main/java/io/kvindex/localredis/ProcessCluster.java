package io.kvindex.localredis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LocalRedisCluster} of {@link RedisProcess} nodes.
 *
 * <p>Forming: every primary gets a distinct config epoch and its slot range before any node meets
 * another (as redis-cli does), node 0 meets all the others, and each replica repeats {@code CLUSTER
 * REPLICATE} until gossip has told it about its primary. Health is read from every running node's
 * own view ({@code CLUSTER INFO}, {@code CLUSTER NODES}, {@code INFO replication}), so a client
 * connecting afterwards sees one consistent topology whichever node it asks.
 *
 * <p>Thread-safe: the node list is fixed; each node serialises its own state changes.
 */
final class ProcessCluster implements LocalRedisCluster {
  private static final Logger log = LoggerFactory.getLogger(ProcessCluster.class);
  private static final int SLOTS = 16384;

  private final List<RedisProcess> nodes = new ArrayList<>();
  private final int primaryCount;
  private final int replicasPerPrimary;

  private ProcessCluster(int primaryCount, int replicasPerPrimary) {
    this.primaryCount = primaryCount;
    this.replicasPerPrimary = replicasPerPrimary;
  }

  static LocalRedisCluster start(Builder builder) {
    long started = System.nanoTime();
    long deadline = started + builder.startupTimeout.toNanos();
    Path binary = builder.redisServer != null ? builder.redisServer : RedisBinary.locate();
    ServerConfig config =
        new ServerConfig(binary, ServerConfig.DEFAULT_STARTUP_TIMEOUT, settings(builder));
    ProcessCluster cluster = new ProcessCluster(builder.primaries, builder.replicasPerPrimary);
    try {
      int total = builder.primaries * (1 + builder.replicasPerPrimary);
      for (int i = 0; i < total; i++) {
        cluster.nodes.add(RedisProcess.start(config));
      }
      cluster.form(deadline);
      cluster.await(deadline, true);
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    log.debug(
        "cluster of {} nodes ready in {} ms",
        cluster.nodes.size(),
        (System.nanoTime() - started) / 1_000_000);
    return cluster;
  }

  private static Map<String, String> settings(Builder builder) {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("cluster-enabled", "yes");
    settings.put("cluster-config-file", "nodes.conf");
    settings.put("cluster-node-timeout", Long.toString(builder.nodeTimeout.toMillis()));
    settings.put("repl-diskless-sync-delay", "0");
    settings.put("cluster-replica-validity-factor", "0");
    settings.putAll(builder.settings);
    return settings;
  }

  private void form(long deadline) {
    for (int i = 0; i < primaryCount; i++) {
      RedisProcess primary = nodes.get(i);
      primary.command("CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
      primary.command(addSlots(SLOTS * i / primaryCount, SLOTS * (i + 1) / primaryCount - 1));
    }
    RedisProcess first = nodes.get(0);
    for (RedisProcess other : nodes.subList(1, nodes.size())) {
      first.command("CLUSTER", "MEET", other.host(), Integer.toString(other.port()));
    }
    for (int i = 0; i < primaryCount; i++) {
      String primaryId = nodes.get(i).nodeId();
      for (int r = 0; r < replicasPerPrimary; r++) {
        replicate(nodes.get(replicaIndex(i, r)), primaryId, deadline);
      }
    }
  }

  private int replicaIndex(int primary, int replica) {
    return primaryCount + primary * replicasPerPrimary + replica;
  }

  private static String[] addSlots(int from, int to) {
    String[] args = new String[2 + to - from + 1];
    args[0] = "CLUSTER";
    args[1] = "ADDSLOTS";
    for (int slot = from; slot <= to; slot++) {
      args[2 + slot - from] = Integer.toString(slot);
    }
    return args;
  }

  /** Repeats CLUSTER REPLICATE until the replica has heard of its primary through gossip. */
  private static void replicate(RedisProcess replica, String primaryId, long deadline) {
    while (true) {
      try {
        replica.command("CLUSTER", "REPLICATE", primaryId);
        return;
      } catch (LocalRedisException e) {
        if (System.nanoTime() > deadline) {
          throw new LocalRedisException(
              replica + " could not become a replica of " + primaryId + ": " + e.getMessage(), e);
        }
      }
      Polling.pause();
    }
  }

  @Override
  public void awaitHealthy(Duration timeout) {
    ServerConfig.checkPositive(timeout, "timeout");
    await(System.nanoTime() + timeout.toNanos(), false);
  }

  private void await(long deadline, boolean asFormed) {
    String problem;
    while ((problem = problem(asFormed)) != null) {
      if (System.nanoTime() > deadline) {
        throw new LocalRedisException(
            "Redis Cluster not healthy in time: "
                + problem
                + ". Node logs: "
                + nodes.stream().map(n -> n.logFile().toString()).toList()
                + "; a slow machine may need a longer startupTimeout or nodeTimeout.");
      }
      Polling.pause();
    }
  }

  /** Returns what is still wrong with the cluster, or {@code null} when it is healthy. */
  private String problem(boolean asFormed) {
    List<RedisProcess> live = nodes.stream().filter(n -> n.isRunning() && !n.isPaused()).toList();
    Set<String> liveIds = new HashSet<>();
    live.forEach(n -> liveIds.add(n.nodeId()));
    Map<String, String> firstSlotView = null;
    for (RedisProcess node : live) {
      Object info = node.tryCommand("CLUSTER", "INFO");
      Object view = node.tryCommand("CLUSTER", "NODES");
      Object replication = node.tryCommand("INFO", "replication");
      if (!(info instanceof String)
          || !(view instanceof String)
          || !(replication instanceof String)) {
        return node + " does not answer";
      }
      if (!"ok".equals(Resp.field((String) info, "cluster_state"))) {
        return node + " reports cluster_state:" + Resp.field((String) info, "cluster_state");
      }
      String viewProblem = viewProblem(node, (String) view, liveIds, asFormed);
      if (viewProblem != null) {
        return viewProblem;
      }
      Map<String, String> slotView = slotOwners((String) view);
      if (firstSlotView == null) {
        firstSlotView = slotView;
      } else if (!firstSlotView.equals(slotView)) {
        return "nodes disagree on slot owners: " + firstSlotView + " vs " + slotView;
      }
      String replicationProblem = replicationProblem(node, (String) replication, asFormed);
      if (replicationProblem != null) {
        return replicationProblem;
      }
    }
    return null;
  }

  private String viewProblem(
      RedisProcess node, String view, Set<String> liveIds, boolean asFormed) {
    int known = 0;
    for (String line : view.split("\n")) {
      String[] f = line.trim().split(" ");
      if (f.length < 8) {
        continue;
      }
      known++;
      String flags = f[2];
      if (liveIds.contains(f[0])
          && (flags.contains("fail") || flags.contains("handshake") || flags.contains("noaddr"))) {
        return node + " sees node " + f[0] + " as " + flags;
      }
      if (asFormed) {
        int index = indexOf(f[0]);
        String intendedPrimary =
            index < primaryCount
                ? "-"
                : nodes.get((index - primaryCount) / replicasPerPrimary).nodeId();
        if (index < 0 || !intendedPrimary.equals(f[3])) {
          return node + " does not yet see node " + f[0] + " in its intended role (" + flags + ")";
        }
      }
    }
    if (asFormed && known != nodes.size()) {
      return node + " knows " + known + " of " + nodes.size() + " nodes";
    }
    return null;
  }

  private String replicationProblem(RedisProcess node, String replication, boolean asFormed) {
    String role = Resp.field(replication, "role");
    if ("slave".equals(role) && !"up".equals(Resp.field(replication, "master_link_status"))) {
      return node + " is a replica whose link to its primary is not up";
    }
    if (asFormed && "master".equals(role)) {
      String connected = Resp.field(replication, "connected_slaves");
      if (!Integer.toString(replicasPerPrimary).equals(connected)) {
        return node + " has " + connected + " of " + replicasPerPrimary + " replicas connected";
      }
    }
    return null;
  }

  /** Maps each primary that serves slots to its slot ranges, in one node's view. */
  private static Map<String, String> slotOwners(String view) {
    Map<String, String> owners = new TreeMap<>();
    for (String line : view.split("\n")) {
      String[] f = line.trim().split(" ");
      if (f.length > 8) {
        StringBuilder slots = new StringBuilder();
        for (int i = 8; i < f.length; i++) {
          if (!f[i].startsWith("[")) {
            slots.append(f[i]).append(' ');
          }
        }
        owners.put(f[0], slots.toString().trim());
      }
    }
    return owners;
  }

  private int indexOf(String nodeId) {
    for (int i = 0; i < nodes.size(); i++) {
      if (nodes.get(i).nodeId().equals(nodeId)) {
        return i;
      }
    }
    return -1;
  }

  /** How long one {@code MIGRATE} may take before it fails (a big hash takes a while). */
  private static final Duration MIGRATE_TIMEOUT = Duration.ofSeconds(60);

  @Override
  public SlotMigration migrateSlot(
      int slot, ClusterNode to, int keysPerMigrate, Runnable afterEachMigrate) {
    if (keysPerMigrate < 1) {
      throw new IllegalArgumentException(
          "keysPerMigrate must be at least 1, not " + keysPerMigrate);
    }
    RedisProcess target = nodes.stream().filter(n -> n == to).findFirst().orElse(null);
    if (target == null || !target.isRunning() || target.role() != ClusterNode.Role.PRIMARY) {
      throw new IllegalArgumentException(to + " is not a running primary of this cluster");
    }
    RedisProcess source = (RedisProcess) ownerOf(slot);
    if (source == target) {
      throw new IllegalArgumentException(to + " already serves slot " + slot);
    }
    String s = Integer.toString(slot);
    long began = System.nanoTime();
    target.command("CLUSTER", "SETSLOT", s, "IMPORTING", source.nodeId());
    source.command("CLUSTER", "SETSLOT", s, "MIGRATING", target.nodeId());
    int keys = 0;
    int calls = 0;
    long longest = 0;
    List<?> before = List.of();
    while (true) {
      List<?> batch =
          (List<?>) source.command("CLUSTER", "GETKEYSINSLOT", s, Integer.toString(keysPerMigrate));
      if (batch.isEmpty()) {
        break;
      }
      if (batch.equals(before)) {
        throw new LocalRedisException(
            "MIGRATE of slot " + slot + " moved none of " + batch + " (keys not valid UTF-8?)");
      }
      before = batch;
      List<String> args =
          new ArrayList<>(
              List.of(
                  "MIGRATE",
                  target.host(),
                  Integer.toString(target.port()),
                  "",
                  "0",
                  Long.toString(MIGRATE_TIMEOUT.toMillis()),
                  "KEYS"));
      batch.forEach(k -> args.add((String) k));
      long t = System.nanoTime();
      source.command(MIGRATE_TIMEOUT.plusSeconds(5), args.toArray(String[]::new));
      longest = Math.max(longest, System.nanoTime() - t);
      calls++;
      keys += batch.size();
      afterEachMigrate.run();
    }
    target.command("CLUSTER", "SETSLOT", s, "NODE", target.nodeId());
    source.command("CLUSTER", "SETSLOT", s, "NODE", target.nodeId());
    for (RedisProcess other : nodes) {
      if (other != source && other != target && other.isRunning() && !other.isPaused()) {
        if (other.role() == ClusterNode.Role.PRIMARY) {
          other.command("CLUSTER", "SETSLOT", s, "NODE", target.nodeId());
        }
      }
    }
    return new SlotMigration(
        keys, calls, Duration.ofNanos(longest), Duration.ofNanos(System.nanoTime() - began));
  }

  @Override
  public List<URI> seedUris() {
    return nodes.stream().map(RedisProcess::uri).toList();
  }

  @Override
  public List<ClusterNode> nodes() {
    return List.copyOf(nodes);
  }

  @Override
  public List<ClusterNode> primaries() {
    return withRole(ClusterNode.Role.PRIMARY);
  }

  @Override
  public List<ClusterNode> replicas() {
    return withRole(ClusterNode.Role.REPLICA);
  }

  private List<ClusterNode> withRole(ClusterNode.Role role) {
    List<ClusterNode> out = new ArrayList<>();
    for (RedisProcess node : nodes) {
      if (node.isRunning() && !node.isPaused() && node.role() == role) {
        out.add(node);
      }
    }
    return out;
  }

  @Override
  public ClusterNode ownerOf(int slot) {
    if (slot < 0 || slot >= SLOTS) {
      throw new IllegalArgumentException("slot must be in [0, 16383], got " + slot);
    }
    for (RedisProcess node : nodes) {
      if (node.isRunning() && !node.isPaused()) {
        Object reply = node.tryCommand("CLUSTER", "SLOTS");
        if (reply instanceof List<?> ranges) {
          return owner(ranges, slot);
        }
      }
    }
    throw new LocalRedisException("no running node answers CLUSTER SLOTS");
  }

  private ClusterNode owner(List<?> ranges, int slot) {
    for (Object item : ranges) {
      List<?> range = (List<?>) item;
      if ((Long) range.get(0) <= slot && slot <= (Long) range.get(1)) {
        long port = (Long) ((List<?>) range.get(2)).get(1);
        return nodes.stream()
            .filter(n -> n.port() == port)
            .findFirst()
            .orElseThrow(() -> new LocalRedisException("slot " + slot + " served by port " + port));
      }
    }
    throw new LocalRedisException("slot " + slot + " is not served by any node");
  }

  @Override
  public void close() {
    RedisProcess.closeAll(nodes);
  }
}
