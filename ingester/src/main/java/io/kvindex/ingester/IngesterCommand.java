package io.kvindex.ingester;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvindex.common.KvIndexException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex ingester}: runs one ingester replica until interrupted. Every setting comes from a
 * flag, else the environment ({@code KVINDEX_*}), else the {@code --config} file, else its default.
 * Not thread-safe: one instance per command line.
 */
@Command(
    name = "ingester",
    mixinStandardHelpOptions = true,
    description = {
      "Runs an ingester replica: subscribes to vLLM pods' KV events and keeps the Redis index"
          + " equal to what they cache.",
      "Each flag can also be set as the environment variable KVINDEX_<FLAG> (upper case, '-' as"
          + " '_') or as a key in the --config file; a flag wins over the environment, which wins"
          + " over the file."
    })
public final class IngesterCommand implements Callable<Integer> {
  private final Map<Setting, String> flags = new EnumMap<>(Setting.class);
  @Spec private CommandSpec spec;
  private Path configFile;

  @Option(names = "--config", paramLabel = "FILE", description = "YAML or JSON settings file")
  void config(Path file) {
    configFile = file;
  }

  @Option(
      names = "--redis-uri",
      paramLabel = "URI",
      description =
          "Redis URI (redis://127.0.0.1:6379; rediss:// TLS; redis-cluster://h1:p1,h2:p2)")
  void redisUri(String v) {
    flags.put(Setting.REDIS_URI, v);
  }

  @Option(
      names = "--redis-timeout",
      paramLabel = "DURATION",
      description = "Redis command timeout (2s)")
  void redisTimeout(String v) {
    flags.put(Setting.REDIS_TIMEOUT, v);
  }

  @Option(
      names = "--redis-retry-budget",
      paramLabel = "DURATION",
      description = "Retry budget of one write (10s)")
  void redisRetryBudget(String v) {
    flags.put(Setting.REDIS_RETRY_BUDGET, v);
  }

  @Option(names = "--index-name", paramLabel = "NAME", description = "Index namespace (default)")
  void indexName(String v) {
    flags.put(Setting.INDEX_NAME, v);
  }

  @Option(names = "--index-groups", paramLabel = "N", description = "Index groups (1)")
  void indexGroups(String v) {
    flags.put(Setting.INDEX_GROUPS, v);
  }

  @Option(
      names = "--replica-id",
      paramLabel = "ID",
      description = "Replica name ($HOSTNAME-<random>)")
  void replicaId(String v) {
    flags.put(Setting.REPLICA_ID, v);
  }

  @Option(names = "--http-host", paramLabel = "HOST", description = "HTTP address (0.0.0.0)")
  void httpHost(String v) {
    flags.put(Setting.HTTP_HOST, v);
  }

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      description = "HTTP port (9400; 0 free; -1 off)")
  void httpPort(String v) {
    flags.put(Setting.HTTP_PORT, v);
  }

  @Option(names = "--lease-ttl", paramLabel = "DURATION", description = "Stream lease TTL (6s)")
  void leaseTtl(String v) {
    flags.put(Setting.LEASE_TTL, v);
  }

  @Option(
      names = "--pod-liveness-ttl",
      paramLabel = "DURATION",
      description = "Pod liveness TTL (30s)")
  void podLivenessTtl(String v) {
    flags.put(Setting.POD_LIVENESS_TTL, v);
  }

  @Option(
      names = "--replay-idle-timeout",
      paramLabel = "DURATION",
      description = "Replay silence bound (2s)")
  void replayIdleTimeout(String v) {
    flags.put(Setting.REPLAY_IDLE_TIMEOUT, v);
  }

  @Option(
      names = "--idle-catch-up",
      paramLabel = "DURATION",
      description = "Replay after a quiet spell (10s)")
  void idleCatchUp(String v) {
    flags.put(Setting.IDLE_CATCH_UP, v);
  }

  @Option(
      names = "--reconnect-min",
      paramLabel = "DURATION",
      description = "First reconnect delay (100ms)")
  void reconnectMin(String v) {
    flags.put(Setting.RECONNECT_MIN, v);
  }

  @Option(
      names = "--reconnect-max",
      paramLabel = "DURATION",
      description = "Reconnect delay cap (5s)")
  void reconnectMax(String v) {
    flags.put(Setting.RECONNECT_MAX, v);
  }

  @Option(
      names = "--retry-min",
      paramLabel = "DURATION",
      description = "First pending-work retry delay (50ms)")
  void retryMin(String v) {
    flags.put(Setting.RETRY_MIN, v);
  }

  @Option(
      names = "--retry-max",
      paramLabel = "DURATION",
      description = "Pending-work retry cap (2s)")
  void retryMax(String v) {
    flags.put(Setting.RETRY_MAX, v);
  }

  @Option(
      names = "--reconcile-interval",
      paramLabel = "DURATION",
      description = "Reconcile period (2s)")
  void reconcileInterval(String v) {
    flags.put(Setting.RECONCILE_INTERVAL, v);
  }

  @Option(
      names = "--unreachable-after",
      paramLabel = "DURATION",
      description = "Purge a pod unreachable this long (30s)")
  void unreachableAfter(String v) {
    flags.put(Setting.UNREACHABLE_AFTER, v);
  }

  @Option(
      names = "--scrape-timeout",
      paramLabel = "DURATION",
      description = "/metrics scrape timeout (2s)")
  void scrapeTimeout(String v) {
    flags.put(Setting.SCRAPE_TIMEOUT, v);
  }

  @Option(names = "--gc-interval", paramLabel = "DURATION", description = "Cleanup period (1s)")
  void gcInterval(String v) {
    flags.put(Setting.GC_INTERVAL, v);
  }

  @Option(
      names = "--departed-retention",
      paramLabel = "DURATION",
      description = "How long a gone pod's records are kept (1h)")
  void departedRetention(String v) {
    flags.put(Setting.DEPARTED_RETENTION, v);
  }

  @Option(
      names = "--gc-max-steps",
      paramLabel = "N",
      description = "Cleanup steps per group per round (100)")
  void gcMaxSteps(String v) {
    flags.put(Setting.GC_MAX_STEPS, v);
  }

  @Option(
      names = "--max-pending-batches",
      paramLabel = "N",
      description = "Live batches buffered per stream (100000)")
  void maxPendingBatches(String v) {
    flags.put(Setting.MAX_PENDING_BATCHES, v);
  }

  @Option(
      names = "--discovery-file",
      paramLabel = "FILE",
      description = "Watched YAML/JSON pod list")
  void discoveryFile(String v) {
    flags.put(Setting.DISCOVERY_FILE, v);
  }

  @Option(
      names = "--pod",
      paramLabel = "SPEC",
      description =
          "A static pod (repeatable): name=..,model=..,endpoint=tcp://h:p[,replay=tcp://h:p]"
              + "[,metrics=http://h:p/metrics][,ranks=0;1][,key-mode=engine|token][,bind=true]")
  private List<String> pods = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    IngesterConfig config;
    try {
      config = config(System.getenv());
    } catch (IllegalArgumentException | IOException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Ingester started;
    try {
      started = Ingester.start(config);
    } catch (KvIndexException e) {
      spec.commandLine().getErr().println("kvindex ingester: cannot start: " + e.getMessage());
      return 1;
    }
    try (Ingester ingester = started) {
      Thread hook = new Thread(ingester::close, "kvindex-ingester-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      ingester.awaitTermination();
    }
    return 0;
  }

  /** The config this command line resolves to, given an environment. */
  IngesterConfig config(Map<String, String> env) throws IOException {
    Map<String, String> file = configFile == null ? Map.of() : readFile(configFile);
    IngesterConfig.Builder b = IngesterConfig.builder();
    for (Setting s : Setting.values()) {
      String v = flags.get(s);
      if (v == null) {
        v = env.get(s.env());
      }
      if (v == null) {
        v = file.get(s.key);
      }
      if (v != null && !v.isBlank()) {
        try {
          s.apply.accept(b, v);
        } catch (RuntimeException e) {
          throw new IllegalArgumentException(
              "setting " + s.key + " (--" + s.key + ", " + s.env() + "): " + e.getMessage(), e);
        }
      }
    }
    for (String p : pods) {
      b.pods(StaticPods.parse(p));
    }
    return b.build();
  }

  private static Map<String, String> readFile(Path path) throws IOException {
    JsonNode root = new ObjectMapper(new YAMLFactory()).readTree(path.toFile());
    Map<String, String> out = new java.util.HashMap<>();
    if (root == null || root.isNull()) {
      return out;
    }
    if (!root.isObject()) {
      throw new IllegalArgumentException(path + ": expected a map of setting: value");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      Setting s = Setting.byKey(e.getKey());
      JsonNode v = e.getValue();
      if (s == Setting.PODS && v.isArray()) {
        List<String> specs = new ArrayList<>();
        v.forEach(n -> specs.add(n.asText()));
        out.put(s.key, String.join(" ", specs));
      } else {
        out.put(s.key, v.asText());
      }
    }
    return out;
  }
}
