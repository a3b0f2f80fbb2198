package io.kvindex.ingester;

import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.ingester.discovery.KubernetesOptions;
import io.kvindex.ingester.discovery.StaticPods;
import io.kvindex.service.ByteSizes;
import io.kvindex.service.Durations;
import io.kvindex.service.HttpService;
import io.kvindex.service.Setting;
import io.kvindex.service.Switches;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * Every ingester setting, declared once: its {@link Setting} (key, flag, environment variable, file
 * key, default, description) and how its value reaches {@link IngesterConfig.Builder}. The builder
 * starts from these defaults; {@link IngesterCommand} offers these flags.
 */
enum IngesterSetting {
  REDIS_URI(
      Setting.of(
          "redis-uri",
          "redis://127.0.0.1:6379",
          "URI",
          "Redis: redis://[user:pass@]host:port, rediss:// for TLS, redis-cluster://h1:p1,h2:p2 for"
              + " a cluster from seed nodes, redis-sentinel://[pass@]s1:p1,s2:p2#master for the"
              + " primary Sentinel names"),
      IngesterConfig.Builder::redisUri),
  REDIS_TLS_CA_FILE(
      Setting.optional(
          "redis-tls-ca-file",
          "none: the JVM's trust store",
          "FILE",
          "PEM file of the CA certificates a rediss:// server's certificate is checked against"),
      (b, v) -> b.redisTlsCaFile(Path.of(v))),
  REDIS_TIMEOUT(
      Setting.of("redis-timeout", "2s", "DURATION", "Redis command and connect timeout"),
      (b, v) -> b.redisTimeout(Durations.parse(v))),
  REDIS_RETRY_BUDGET(
      Setting.of(
          "redis-retry-budget",
          "10s",
          "DURATION",
          "How long a write retries temporary Redis errors (jittered exponential backoff) before it"
              + " is swallowed, counted and left pending"),
      (b, v) -> b.redisRetryBudget(Durations.parse(v))),
  INDEX_NAME(
      Setting.of("index-name", "default", "NAME", "Index namespace in Redis"),
      IngesterConfig.Builder::indexName),
  INDEX_GROUPS(
      Setting.of(
          "index-groups",
          "1",
          "N",
          "Index groups (hash slots) the index spreads pods over; must match the index"),
      (b, v) -> b.indexGroups(Integer.parseInt(v))),
  REPLICA_ID(
      Setting.optional(
          "replica-id",
          "$HOSTNAME-<random>",
          "ID",
          "This replica's name in the registry and on its leases (unique per process)"),
      IngesterConfig.Builder::replicaId),
  HTTP_HOST(
      Setting.of("http-host", "0.0.0.0", "HOST", "Address of /metrics, /healthz, /readyz"),
      IngesterConfig.Builder::httpHost),
  HTTP_PORT(
      Setting.of(
          "http-port",
          "9400",
          "PORT",
          "Port of /metrics, /healthz, /readyz (0 picks a free one, -1 turns HTTP off)"),
      (b, v) -> b.httpPort(Integer.parseInt(v))),
  HTTP_READ_TIMEOUT(
      Setting.of(
          "http-read-timeout",
          Durations.format(HttpService.DEFAULT_READ_TIMEOUT),
          "DURATION",
          "Longest an HTTP client may take to send its whole request, or to take in the answer;"
              + " then the connection is closed. Whole seconds; process-wide"),
      (b, v) -> b.httpReadTimeout(HttpService.checkTimeout(Durations.parse(v), "the timeout"))),
  HTTP_IDLE_TIMEOUT(
      Setting.of(
          "http-idle-timeout",
          Durations.format(HttpService.DEFAULT_IDLE_TIMEOUT),
          "DURATION",
          "An idle kept-alive HTTP connection is closed after this. Whole seconds;"
              + " process-wide"),
      (b, v) -> b.httpIdleTimeout(HttpService.checkTimeout(Durations.parse(v), "the timeout"))),
  LEASE_TTL(
      Setting.of(
          "lease-ttl",
          "6s",
          "DURATION",
          "Stream lease and replica registration lifetime; renewed every third; a dead replica's"
              + " streams move within about 1.3x this"),
      (b, v) -> b.leaseTtl(Durations.parse(v))),
  POD_LIVENESS_TTL(
      Setting.of(
          "pod-liveness-ttl",
          "30s",
          "DURATION",
          "How long readers trust a pod's entries after its owner last refreshed it"),
      (b, v) -> b.podLivenessTtl(Durations.parse(v))),
  REPLAY_IDLE_TIMEOUT(
      Setting.of(
          "replay-idle-timeout",
          "2s",
          "DURATION",
          "Longest wait for the next replay message before the replay counts as silent"),
      (b, v) -> b.replayIdleTimeout(Durations.parse(v))),
  IDLE_CATCH_UP(
      Setting.of(
          "idle-catch-up",
          "10s",
          "DURATION",
          "A stream quiet this long asks its replay socket for batches after its watermark"
              + " (recovers a lost last batch, and what a new subscriber missed)"),
      (b, v) -> b.idleCatchUp(Durations.parse(v))),
  RECONNECT_MIN(
      Setting.of("reconnect-min", "100ms", "DURATION", "First (jittered) reconnect delay"),
      (b, v) -> b.reconnectMin(Durations.parse(v))),
  RECONNECT_MAX(
      Setting.of("reconnect-max", "5s", "DURATION", "Reconnect delay cap"),
      (b, v) -> b.reconnectMax(Durations.parse(v))),
  RETRY_MIN(
      Setting.of(
          "retry-min",
          "50ms",
          "DURATION",
          "First (jittered) delay before work a temporary Redis error left pending is retried"),
      (b, v) -> b.retryMin(Durations.parse(v))),
  RETRY_MAX(
      Setting.of(
          "retry-max",
          "500ms",
          "DURATION",
          "Cap of that delay; also the retry interval of a failed stream"),
      (b, v) -> b.retryMax(Durations.parse(v))),
  RECONCILE_INTERVAL(
      Setting.of(
          "reconcile-interval",
          "2s",
          "DURATION",
          "How often owned pods' /metrics are scraped for sleep, reachability and restarts"),
      (b, v) -> b.reconcileInterval(Durations.parse(v))),
  UNREACHABLE_AFTER(
      Setting.of(
          "unreachable-after", "30s", "DURATION", "A pod whose /metrics fails this long is purged"),
      (b, v) -> b.unreachableAfter(Durations.parse(v))),
  SCRAPE_TIMEOUT(
      Setting.of(
          "scrape-timeout",
          "2s",
          "DURATION",
          "Longest one /metrics scrape may take, from its request to the page's last byte"),
      (b, v) -> b.scrapeTimeout(Durations.parse(v))),
  MAX_SCRAPE_BYTES(
      Setting.of(
          "max-scrape-bytes",
          "8MiB",
          "SIZE",
          "Largest /metrics page read; a larger one is a failed scrape, the rest of it unread"),
      (b, v) -> b.maxScrapeBytes(ByteSizes.parse(v))),
  GC_INTERVAL(
      Setting.of(
          "gc-interval",
          "1s",
          "DURATION",
          "How often purged entries are cleaned up (bounded steps)"),
      (b, v) -> b.gcInterval(Durations.parse(v))),
  GC_MAX_STEPS(
      Setting.of(
          "gc-max-steps",
          "100",
          "N",
          "Most cleanup steps per group per GC round (up to 16 times more while the group's"
              + " holder slots run low)"),
      (b, v) -> b.gcMaxSteps(Integer.parseInt(v))),
  APPLY_CHUNK_BLOCKS(
      Setting.of(
          "apply-chunk-blocks",
          Integer.toString(PrefixIndexBuilder.DEFAULT_APPLY_CHUNK_BLOCKS),
          "N",
          "Blocks one apply call writes at most, 16 to 8192 (a token-mode block counts two): a"
              + " larger batch, such as a long prompt's prefill, takes several calls, so that no"
              + " call holds Redis for long. Replicas may differ: a batch one of them left between"
              + " two calls is taken up by another at the block it stopped at"),
      (b, v) -> b.applyChunkBlocks(Integer.parseInt(v))),
  DEPARTED_RETENTION(
      Setting.of(
          "departed-retention",
          "1h",
          "DURATION",
          "How long a pod's records (watermarks, slots) outlive its liveness; then GC forgets them"),
      (b, v) -> b.departedRetention(Durations.parse(v))),
  INFER_EVICTIONS(
      Setting.of(
          "infer-evictions",
          "true",
          "BOOL",
          "Whether a router's drift resync of a pod whose engine reports its KV-cache capacity"
              + " (vllm:cache_config_info) also makes the pod's evictions inferred: its engine"
              + " does not publish them all, so its streams keep a model of its cache, fed by what"
              + " routers observe, and remove what the model evicts (engine keys only; false: purge"
              + " and replay only)"),
      (b, v) -> b.inferEvictions(Switches.parse(v))),
  INFERENCE_LAG_LIMIT(
      Setting.of(
          "inference-lag-limit",
          "30s",
          "DURATION",
          "A stream whose evictions are inferred and whose batches are applied at least this late"
              + " through as long a stretch of its engine's time cannot keep up: it says so"
              + " (kvindex_ingester_inference_stops_total) and stops inferring, following only"
              + " what its engine publishes"),
      (b, v) -> b.inferenceLagLimit(Durations.parse(v))),
  MEMORY_BUDGET(
      Setting.of(
          "memory-budget",
          "25%",
          "SIZE|N%",
          "The process's memory budget, shared by every stream: decoded batches waiting or"
              + " replayed, and what its sockets received and it has not read yet; a size, or a"
              + " share of the JVM's maximum heap. Half is for live batches (past it they are"
              + " dropped and replayed later as a gap), half for replay windows"),
      (b, v) -> {
        if (v.trim().endsWith("%")) {
          b.memoryBudgetHeapShare(heapShare(v));
        } else {
          b.memoryBudgetBytes(ByteSizes.parse(v));
        }
      }),
  MAX_CONCURRENT_REPLAYS(
      Setting.of(
          "max-concurrent-replays",
          "4",
          "N",
          "Streams reading a replay at a time, each in an equal window of the budget's replay half"
              + " (a longer replay is read window by window); the others wait their turn"),
      (b, v) -> b.maxConcurrentReplays(Integer.parseInt(v))),
  KEY_CHECK_INTERVAL(
      Setting.of(
          "key-check-interval",
          "1s",
          "DURATION",
          "How often each model's events are checked against the routers' keys: at most one"
              + " BlockStored per model per interval has its block hashes recomputed with the keys"
              + " routers noted for the model (and, when they differ, with every known form), so"
              + " a hashing mismatch shows in metrics, the log, /readyz and inspect; 0 turns the"
              + " check off"),
      (b, v) -> b.keyCheckInterval(Durations.parse(v))),
  MAX_PENDING_BATCHES(
      Setting.of(
          "max-pending-batches",
          "100000",
          "N",
          "Batches one stream holds waiting (live, or brought by a replay); the SUB high-water"
              + " mark is the smaller of this and 256"),
      (b, v) -> b.maxPendingBatches(Integer.parseInt(v))),
  MAX_PENDING_BYTES(
      Setting.of(
          "max-pending-bytes",
          "64MiB",
          "SIZE",
          "Bytes of decoded live batches one stream holds waiting, within the memory budget; past"
              + " it batches are dropped and replayed later as a gap"),
      (b, v) -> b.maxPendingBytes(ByteSizes.parse(v))),
  MAX_REPLAY_BYTES(
      Setting.of(
          "max-replay-bytes",
          "256MiB",
          "SIZE",
          "Bytes of decoded batches one replay window holds, within its share of the memory"
              + " budget; a longer replay is read window by window, and a single batch larger"
              + " than a window purges the stream, going on from live"),
      (b, v) -> b.maxReplayBytes(ByteSizes.parse(v))),
  MAX_MESSAGE_BYTES(
      Setting.of(
          "max-message-bytes",
          "64MiB",
          "SIZE",
          "Largest ZeroMQ message accepted from a pod (live or replay); a larger one closes that"
              + " connection, and what it carried is replayed or purged"),
      (b, v) -> b.maxMessageBytes(ByteSizes.parse(v))),
  DISCOVERY(
      Setting.of(
          "discovery",
          "static",
          "MODE",
          "Where pods come from: static (--pod and --discovery-file) or kubernetes (the pods"
              + " --kubernetes-label-selector picks, watched through the API server, besides the"
              + " static ones)"),
      (b, v) -> b.discovery(IngesterConfig.Discovery.parse(v))),
  KUBERNETES_NAMESPACES(
      Setting.optional(
          "kubernetes-namespaces",
          "the ingester's own namespace",
          "NS[,NS...]",
          "Namespaces whose pods kubernetes discovery watches, separated by commas"),
      (b, v) -> b.kubernetesNamespaces(KubernetesOptions.namespaces(v))),
  KUBERNETES_LABEL_SELECTOR(
      Setting.of(
          "kubernetes-label-selector",
          "kvindex.io/enabled=true",
          "SELECTOR",
          "The pods kubernetes discovery watches, as a label selector"),
      IngesterConfig.Builder::kubernetesLabelSelector),
  KUBERNETES_NOT_READY_AFTER(
      Setting.of(
          "kubernetes-not-ready-after",
          "30s",
          "DURATION",
          "How long a watched pod may stay not ready before it stops being a stream and is"
              + " purged"),
      (b, v) -> b.kubernetesNotReadyAfter(Durations.parse(v))),
  KUBERNETES_POD_NAME(
      Setting.of(
          "kubernetes-pod-name",
          "name",
          "name|ip",
          "What names a watched pod in the index (the key gateways route by): its name or its IP"
              + " address"),
      (b, v) -> b.kubernetesPodName(KubernetesOptions.PodName.parse(v))),
  DISCOVERY_FILE(
      Setting.optional(
          "discovery-file", "none", "FILE", "YAML or JSON pod list, reloaded when it changes"),
      (b, v) -> b.discoveryFile(Path.of(v))),
  PODS(
      Setting.optional(
              "pods",
              "none",
              "SPEC",
              "A static pod (repeatable; the environment and the file take several, separated by"
                  + " white space): name=..,model=..,endpoint=tcp://h:p[,replay=tcp://h:p]"
                  + "[,metrics=http://h:p/metrics][,ranks=0;1][,key-mode=engine|token][,bind=true]"
                  + "[,topic=..]")
          .flags("--pod")
          .repeatable("\\s+"),
      (b, v) -> b.pods(StaticPods.parse(v)));

  final Setting setting;
  final BiConsumer<IngesterConfig.Builder, String> apply;

  IngesterSetting(Setting setting, BiConsumer<IngesterConfig.Builder, String> apply) {
    this.setting = setting;
    this.apply = apply;
  }

  /** A share of the heap written {@code 25%}. */
  private static double heapShare(String text) {
    String v = text.trim();
    try {
      return Double.parseDouble(v.substring(0, v.length() - 1).trim()) / 100;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "'" + text + "' is not a share of the heap; write for example 25% (or a size: 256MiB)",
          e);
    }
  }

  /** Every declaration, in order. */
  static List<Setting> all() {
    return Arrays.stream(values()).map(s -> s.setting).toList();
  }
}
