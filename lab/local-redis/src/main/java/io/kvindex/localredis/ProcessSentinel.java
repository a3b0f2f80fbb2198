package io.kvindex.localredis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LocalRedisSentinel} of {@link RedisProcess}es. The replicas are linked before the
 * Sentinels start, so each Sentinel's first INFO of the primary lists them; readiness is every
 * Sentinel seeing every replica with its link up, and {@code SENTINEL CKQUORUM} answering OK
 * (enough Sentinels know each other to authorise a failover). Thread-safe: the node lists are
 * fixed; each node serialises its own state changes.
 */
final class ProcessSentinel implements LocalRedisSentinel {
  private static final Logger log = LoggerFactory.getLogger(ProcessSentinel.class);

  private final String masterName;
  private final List<RedisProcess> data = new ArrayList<>();
  private final List<RedisProcess> sentinels = new ArrayList<>();

  private ProcessSentinel(String masterName) {
    this.masterName = masterName;
  }

  static LocalRedisSentinel start(Builder builder) {
    long started = System.nanoTime();
    long deadline = started + builder.startupTimeout.toNanos();
    Path binary = builder.redisServer != null ? builder.redisServer : RedisBinary.locate();
    ProcessSentinel set = new ProcessSentinel(builder.masterName);
    try {
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put("repl-diskless-sync-delay", "0");
      settings.putAll(builder.settings);
      RedisProcess primary =
          RedisProcess.start(
              new ServerConfig(binary, ServerConfig.DEFAULT_STARTUP_TIMEOUT, settings));
      set.data.add(primary);
      Map<String, String> replicaSettings = new LinkedHashMap<>(settings);
      replicaSettings.put("replicaof", primary.host() + " " + primary.port());
      for (int i = 0; i < builder.replicas; i++) {
        set.data.add(
            RedisProcess.start(
                new ServerConfig(binary, ServerConfig.DEFAULT_STARTUP_TIMEOUT, replicaSettings)));
      }
      set.awaitLinked(deadline);
      List<String> monitor = sentinelLines(builder, primary);
      for (int i = 0; i < builder.sentinels; i++) {
        set.sentinels.add(
            RedisProcess.start(
                new ServerConfig(binary, ServerConfig.DEFAULT_STARTUP_TIMEOUT, Map.of(), monitor)));
      }
      set.await(deadline, set::sentinelProblem, "Sentinels not ready");
    } catch (RuntimeException e) {
      set.close();
      throw e;
    }
    log.debug(
        "Sentinel set of {} data nodes and {} sentinels ready in {} ms",
        set.data.size(),
        set.sentinels.size(),
        (System.nanoTime() - started) / 1_000_000);
    return set;
  }

  private static List<String> sentinelLines(Builder builder, RedisProcess primary) {
    String name = builder.masterName;
    int quorum = builder.sentinels / 2 + 1;
    return List.of(
        "sentinel monitor " + name + " " + primary.host() + " " + primary.port() + " " + quorum,
        "sentinel down-after-milliseconds " + name + " " + builder.downAfter.toMillis(),
        "sentinel failover-timeout " + name + " 10000",
        "sentinel parallel-syncs " + name + " 1");
  }

  private void awaitLinked(long deadline) {
    await(deadline, this::replicationProblem, "replicas not linked");
  }

  private void await(long deadline, java.util.function.Supplier<String> problem, String what) {
    String current;
    while ((current = problem.get()) != null) {
      if (System.nanoTime() > deadline) {
        throw new LocalRedisException(
            what
                + " in time: "
                + current
                + ". Logs: "
                + all().stream().map(n -> n.logFile().toString()).toList());
      }
      Polling.pause();
    }
  }

  private List<RedisProcess> all() {
    List<RedisProcess> all = new ArrayList<>(data);
    all.addAll(sentinels);
    return all;
  }

  /** What keeps the replicas of the current primary from being in step, or null. */
  private String replicationProblem() {
    for (RedisProcess node : running(data)) {
      Object info = node.tryCommand("INFO", "replication");
      if (!(info instanceof String text)) {
        return node + " does not answer";
      }
      if ("slave".equals(Resp.field(text, "role"))
          && !"up".equals(Resp.field(text, "master_link_status"))) {
        return node + " is a replica whose link to its primary is not up";
      }
    }
    return null;
  }

  private String sentinelProblem() {
    for (RedisProcess sentinel : running(sentinels)) {
      Object replicas = sentinel.tryCommand("SENTINEL", "REPLICAS", masterName);
      if (!(replicas instanceof List<?> list) || list.size() < data.size() - 1) {
        return sentinel + " does not know every replica yet";
      }
      for (Object replica : list) {
        Map<String, String> fields = fields(replica);
        if (!"ok".equals(fields.get("master-link-status"))
            || fields.getOrDefault("flags", "").contains("down")
            || fields.getOrDefault("flags", "").contains("disconnected")) {
          return sentinel + " sees replica " + fields.get("name") + " as " + fields;
        }
      }
      Object quorum = sentinel.tryCommand("SENTINEL", "CKQUORUM", masterName);
      if (!(quorum instanceof String ok) || !ok.startsWith("OK")) {
        return sentinel + " cannot authorise a failover yet: " + quorum;
      }
      Object peers = sentinel.tryCommand("SENTINEL", "SENTINELS", masterName);
      if (!(peers instanceof List<?> others) || others.size() < sentinels.size() - 1) {
        return sentinel + " does not know every other Sentinel yet";
      }
    }
    return null;
  }

  private static Map<String, String> fields(Object flat) {
    Map<String, String> out = new LinkedHashMap<>();
    List<?> items = (List<?>) flat;
    for (int i = 0; i + 1 < items.size(); i += 2) {
      out.put(String.valueOf(items.get(i)), String.valueOf(items.get(i + 1)));
    }
    return out;
  }

  private static List<RedisProcess> running(List<RedisProcess> nodes) {
    return nodes.stream().filter(n -> n.isRunning() && !n.isPaused()).toList();
  }

  @Override
  public String masterName() {
    return masterName;
  }

  @Override
  public URI uri() {
    String hosts =
        sentinels.stream().map(s -> s.host() + ":" + s.port()).collect(Collectors.joining(","));
    return URI.create("redis-sentinel://" + hosts + "#" + masterName);
  }

  @Override
  public List<RedisNode> dataNodes() {
    return List.copyOf(data);
  }

  @Override
  public List<RedisNode> sentinels() {
    return List.copyOf(sentinels);
  }

  @Override
  public RedisNode primary() {
    for (RedisProcess sentinel : running(sentinels)) {
      RedisProcess named = named(sentinel);
      if (named != null) {
        return named;
      }
    }
    throw new LocalRedisException("no running Sentinel names a known primary");
  }

  /** The data node a Sentinel names as primary, or null if it does not answer. */
  private RedisProcess named(RedisProcess sentinel) {
    Object reply = sentinel.tryCommand("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName);
    if (!(reply instanceof List<?> address) || address.size() != 2) {
      return null;
    }
    int port = Integer.parseInt(String.valueOf(address.get(1)));
    return data.stream().filter(n -> n.port() == port).findFirst().orElse(null);
  }

  @Override
  public RedisNode awaitPrimaryOtherThan(RedisNode old, Duration timeout) {
    ServerConfig.checkPositive(timeout, "timeout");
    long deadline = System.nanoTime() + timeout.toNanos();
    RedisProcess[] found = new RedisProcess[1];
    await(deadline, () -> promotionProblem(old, found), "no failover");
    return found[0];
  }

  private String promotionProblem(RedisNode old, RedisProcess[] found) {
    RedisProcess agreed = null;
    for (RedisProcess sentinel : running(sentinels)) {
      RedisProcess named = named(sentinel);
      if (named == null || named.port() == old.port()) {
        return sentinel + " still names " + (named == null ? "no node" : named) + " as primary";
      }
      if (agreed != null && agreed != named) {
        return "Sentinels disagree: " + agreed + " and " + named;
      }
      agreed = named;
    }
    if (agreed == null || agreed.role() != ClusterNode.Role.PRIMARY) {
      return agreed + " is named but does not report the primary role yet";
    }
    found[0] = agreed;
    return null;
  }

  @Override
  public void failover() {
    RedisProcess sentinel = running(sentinels).get(0);
    sentinel.command("SENTINEL", "FAILOVER", masterName);
  }

  @Override
  public void awaitReplicated(Duration timeout) {
    ServerConfig.checkPositive(timeout, "timeout");
    long deadline = System.nanoTime() + timeout.toNanos();
    await(deadline, this::lagProblem, "replicas behind");
  }

  private String lagProblem() {
    RedisProcess primary = (RedisProcess) primary();
    String info = (String) primary.command("INFO", "replication");
    long offset = Long.parseLong(Resp.field(info, "master_repl_offset"));
    for (RedisProcess replica : running(data)) {
      if (replica == primary) {
        continue;
      }
      Object reply = replica.tryCommand("INFO", "replication");
      String at = reply instanceof String text ? Resp.field(text, "slave_repl_offset") : null;
      if (at == null || Long.parseLong(at) < offset) {
        return replica + " is at " + at + " of " + offset;
      }
    }
    return null;
  }

  @Override
  public void close() {
    RedisProcess.closeAll(all());
  }

  @Override
  public String toString() {
    return "Sentinel set " + masterName + " at " + uri();
  }
}
