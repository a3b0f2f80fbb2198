package io.kvindex.ingester;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.function.BiConsumer;

/**
 * Every ingester setting: its key (the flag is {@code --key}, the config-file key is {@code key},
 * the environment variable is {@code KVINDEX_KEY} upper-cased with {@code _}), its default and its
 * meaning. A flag beats the environment, which beats the file, which beats the default.
 */
enum Setting {
  REDIS_URI(
      "redis-uri",
      "redis://127.0.0.1:6379",
      "Redis: redis://[user:pass@]host:port, rediss:// for TLS, redis-cluster://h1:p1,h2:p2 for"
          + " a cluster from seed nodes",
      (b, v) -> b.redisUri(v)),
  REDIS_TIMEOUT(
      "redis-timeout",
      "2s",
      "Redis command and connect timeout",
      (b, v) -> b.redisTimeout(duration(v))),
  REDIS_RETRY_BUDGET(
      "redis-retry-budget",
      "10s",
      "How long a write retries temporary Redis errors (jittered exponential backoff) before it"
          + " is swallowed, counted and left pending",
      (b, v) -> b.redisRetryBudget(duration(v))),
  INDEX_NAME("index-name", "default", "Index namespace in Redis", (b, v) -> b.indexName(v)),
  INDEX_GROUPS(
      "index-groups",
      "1",
      "Index groups (hash slots) the index spreads pods over; must match the index",
      (b, v) -> b.indexGroups(Integer.parseInt(v))),
  REPLICA_ID(
      "replica-id",
      "$HOSTNAME-<random>",
      "This replica's name in the registry and on its leases (unique per process)",
      (b, v) -> b.replicaId(v)),
  HTTP_HOST(
      "http-host", "0.0.0.0", "Address of /metrics, /healthz, /readyz", (b, v) -> b.httpHost(v)),
  HTTP_PORT(
      "http-port",
      "9400",
      "Port of /metrics, /healthz, /readyz (0 picks a free one, -1 turns HTTP off)",
      (b, v) -> b.httpPort(Integer.parseInt(v))),
  LEASE_TTL(
      "lease-ttl",
      "6s",
      "Stream lease and replica registration lifetime; renewed every third; a dead replica's"
          + " streams move within about 1.3x this",
      (b, v) -> b.leaseTtl(duration(v))),
  POD_LIVENESS_TTL(
      "pod-liveness-ttl",
      "30s",
      "How long readers trust a pod's entries after its owner last refreshed it",
      (b, v) -> b.podLivenessTtl(duration(v))),
  REPLAY_IDLE_TIMEOUT(
      "replay-idle-timeout",
      "2s",
      "Longest wait for the next replay message before the replay counts as silent",
      (b, v) -> b.replayIdleTimeout(duration(v))),
  IDLE_CATCH_UP(
      "idle-catch-up",
      "10s",
      "A stream quiet this long asks its replay socket for batches after its watermark (recovers"
          + " a lost last batch, and what a new subscriber missed)",
      (b, v) -> b.idleCatchUp(duration(v))),
  RECONNECT_MIN(
      "reconnect-min",
      "100ms",
      "First (jittered) reconnect delay",
      (b, v) -> b.reconnectMin(duration(v))),
  RECONNECT_MAX(
      "reconnect-max", "5s", "Reconnect delay cap", (b, v) -> b.reconnectMax(duration(v))),
  RETRY_MIN(
      "retry-min",
      "50ms",
      "First (jittered) delay before work a temporary Redis error left pending is retried",
      (b, v) -> b.retryMin(duration(v))),
  RETRY_MAX(
      "retry-max",
      "2s",
      "Cap of that delay; also the retry interval of a failed stream",
      (b, v) -> b.retryMax(duration(v))),
  RECONCILE_INTERVAL(
      "reconcile-interval",
      "2s",
      "How often owned pods' /metrics are scraped for sleep and reachability",
      (b, v) -> b.reconcileInterval(duration(v))),
  UNREACHABLE_AFTER(
      "unreachable-after",
      "30s",
      "A pod whose /metrics fails this long is purged",
      (b, v) -> b.unreachableAfter(duration(v))),
  SCRAPE_TIMEOUT(
      "scrape-timeout",
      "2s",
      "Timeout of one /metrics scrape",
      (b, v) -> b.scrapeTimeout(duration(v))),
  GC_INTERVAL(
      "gc-interval",
      "1s",
      "How often purged entries are cleaned up (bounded steps)",
      (b, v) -> b.gcInterval(duration(v))),
  GC_MAX_STEPS(
      "gc-max-steps",
      "100",
      "Most cleanup steps per group per GC round",
      (b, v) -> b.gcMaxSteps(Integer.parseInt(v))),
  DEPARTED_RETENTION(
      "departed-retention",
      "1h",
      "How long a pod's records (watermarks, slots) outlive its liveness; then GC forgets them",
      (b, v) -> b.departedRetention(duration(v))),
  MAX_PENDING_BATCHES(
      "max-pending-batches",
      "100000",
      "Live batches buffered per stream while waiting (replay, pending purge); also the SUB HWM",
      (b, v) -> b.maxPendingBatches(Integer.parseInt(v))),
  DISCOVERY_FILE(
      "discovery-file",
      "(none)",
      "YAML or JSON pod list, reloaded when it changes",
      (b, v) -> b.discoveryFile(Path.of(v))),
  PODS(
      "pods",
      "(none)",
      "Static pods, space-separated, each name=..,model=..,endpoint=..[,replay=..][,metrics=..]"
          + "[,ranks=0;1][,key-mode=engine|token][,bind=true][,topic=..]",
      (b, v) -> b.pods(StaticPods.parse(v)));

  final String key;
  final String defaultValue;
  final String description;
  final BiConsumer<IngesterConfig.Builder, String> apply;

  Setting(
      String key,
      String defaultValue,
      String description,
      BiConsumer<IngesterConfig.Builder, String> apply) {
    this.key = key;
    this.defaultValue = defaultValue;
    this.description = description;
    this.apply = apply;
  }

  String env() {
    return "KVINDEX_" + key.toUpperCase(Locale.ROOT).replace('-', '_');
  }

  static Setting byKey(String key) {
    for (Setting s : values()) {
      if (s.key.equals(key)) {
        return s;
      }
    }
    throw new IllegalArgumentException(
        "unknown ingester setting '" + key + "'; see `kvindex ingester --help` for the list");
  }

  /** Parses {@code 250ms}, {@code 6s}, {@code 2m}, or an ISO-8601 duration ({@code PT6S}). */
  static Duration duration(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    try {
      if (s.startsWith("pt") || s.startsWith("p")) {
        return Duration.parse(s.toUpperCase(Locale.ROOT));
      }
      if (s.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
      }
      if (s.endsWith("s")) {
        return Duration.ofMillis(
            Math.round(Double.parseDouble(s.substring(0, s.length() - 1)) * 1000));
      }
      if (s.endsWith("m")) {
        return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)) * 60);
      }
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "cannot read duration '" + v + "': use 250ms, 6s or 2m", e);
    }
    throw new IllegalArgumentException("cannot read duration '" + v + "': use 250ms, 6s or 2m");
  }
}
