package io.kvindex.ingester;

import io.kvindex.common.Check;
import io.kvindex.ingester.discovery.KubernetesOptions;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.service.HttpService;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The ingester's settings. Every default is declared once, in {@link IngesterSetting}, which the
 * builder starts from (and docs/configuration.md lists). Immutable and thread-safe; build with
 * {@link #builder()}.
 */
public final class IngesterConfig {
  /** Where pods come from. */
  public enum Discovery {
    /** The pods given by flags and the discovery file. */
    STATIC,
    /** The pods a label selector picks in Kubernetes, and the static ones. */
    KUBERNETES;

    /**
     * {@code static} or {@code kubernetes}, any case.
     *
     * @throws IllegalArgumentException naming the accepted values
     */
    public static Discovery parse(String text) {
      for (Discovery d : values()) {
        if (d.name().equalsIgnoreCase(text.trim())) {
          return d;
        }
      }
      throw new IllegalArgumentException(
          "discovery must be 'static' (flags and file) or 'kubernetes', got '" + text + "'");
    }
  }

  private final String redisUri;
  private final Path redisTlsCaFile;
  private final String indexName;
  private final int indexGroups;
  private final Duration redisTimeout;
  private final Duration redisRetryBudget;
  private final String replicaId;
  private final String httpHost;
  private final int httpPort;
  private final Duration httpReadTimeout;
  private final Duration httpIdleTimeout;
  private final Duration leaseTtl;
  private final Duration podLivenessTtl;
  private final Duration replayIdleTimeout;
  private final Duration idleCatchUp;
  private final Duration keyCheckInterval;
  private final Duration reconnectMin;
  private final Duration reconnectMax;
  private final Duration retryMin;
  private final Duration retryMax;
  private final Duration reconcileInterval;
  private final Duration unreachableAfter;
  private final Duration scrapeTimeout;
  private final long maxScrapeBytes;
  private final Duration gcInterval;
  private final Duration departedRetention;
  private final boolean inferEvictions;
  private final Duration inferenceLagLimit;
  private final int gcMaxSteps;
  private final int applyChunkBlocks;
  private final int maxPendingBatches;
  private final MemoryBounds memoryBounds;
  private final Path discoveryFile;
  private final List<PodSpec> pods;
  private final Discovery discovery;
  private final KubernetesOptions kubernetes;

  private IngesterConfig(Builder b) {
    this.redisUri = Check.notBlank(b.redisUri, "redisUri");
    this.redisTlsCaFile = b.redisTlsCaFile;
    this.indexName = Check.notBlank(b.indexName, "indexName");
    this.indexGroups = Check.atLeast(b.indexGroups, 1, "indexGroups");
    this.redisTimeout = Check.positive(b.redisTimeout, "redisTimeout");
    this.redisRetryBudget = Check.positive(b.redisRetryBudget, "redisRetryBudget");
    this.replicaId =
        b.replicaId == null ? defaultReplicaId() : Check.notBlank(b.replicaId, "replicaId");
    this.httpHost = Check.notBlank(b.httpHost, "httpHost");
    this.httpPort = Check.atLeast(b.httpPort, -1, "httpPort");
    this.httpReadTimeout = HttpService.checkTimeout(b.httpReadTimeout, "httpReadTimeout");
    this.httpIdleTimeout = HttpService.checkTimeout(b.httpIdleTimeout, "httpIdleTimeout");
    this.leaseTtl = Check.positive(b.leaseTtl, "leaseTtl");
    Check.atLeast(leaseTtl.toMillis(), 300, "leaseTtl in ms");
    this.podLivenessTtl = Check.positive(b.podLivenessTtl, "podLivenessTtl");
    this.replayIdleTimeout = Check.positive(b.replayIdleTimeout, "replayIdleTimeout");
    this.idleCatchUp = Check.positive(b.idleCatchUp, "idleCatchUp");
    this.keyCheckInterval = Check.notNull(b.keyCheckInterval, "keyCheckInterval");
    if (keyCheckInterval.isNegative()) {
      throw new IllegalArgumentException(
          "keyCheckInterval must be >= 0 (0 turns the key check off), got " + keyCheckInterval);
    }
    this.reconnectMin = Check.positive(b.reconnectMin, "reconnectMin");
    this.reconnectMax = Check.positive(b.reconnectMax, "reconnectMax");
    this.retryMin = Check.positive(b.retryMin, "retryMin");
    this.retryMax = Check.positive(b.retryMax, "retryMax");
    this.reconcileInterval = Check.positive(b.reconcileInterval, "reconcileInterval");
    this.unreachableAfter = Check.positive(b.unreachableAfter, "unreachableAfter");
    this.scrapeTimeout = Check.positive(b.scrapeTimeout, "scrapeTimeout");
    this.maxScrapeBytes = Check.atLeast(b.maxScrapeBytes, 1 << 10, "maxScrapeBytes");
    this.gcInterval = Check.positive(b.gcInterval, "gcInterval");
    this.departedRetention = Check.positive(b.departedRetention, "departedRetention");
    this.inferEvictions = b.inferEvictions;
    this.inferenceLagLimit = Check.positive(b.inferenceLagLimit, "inferenceLagLimit");
    this.gcMaxSteps = Check.atLeast(b.gcMaxSteps, 1, "gcMaxSteps");
    this.applyChunkBlocks = Check.between(b.applyChunkBlocks, 16, 8192, "applyChunkBlocks");
    this.maxPendingBatches = Check.atLeast(b.maxPendingBatches, 16, "maxPendingBatches");
    this.memoryBounds =
        new MemoryBounds(
            memoryBudget(b),
            Check.between(b.maxConcurrentReplays, 1, 1024, "maxConcurrentReplays"),
            Check.atLeast(b.maxPendingBytes, 1 << 16, "maxPendingBytes"),
            Check.atLeast(b.maxReplayBytes, 1 << 16, "maxReplayBytes"),
            Check.atLeast(b.maxMessageBytes, 1 << 10, "maxMessageBytes"));
    this.discoveryFile = b.discoveryFile;
    this.pods = List.copyOf(b.pods);
    this.discovery = Check.notNull(b.discovery, "discovery");
    this.kubernetes =
        new KubernetesOptions(
            b.kubernetesNamespaces,
            b.kubernetesLabelSelector,
            b.kubernetesNotReadyAfter,
            b.kubernetesPodName);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The budget in bytes: as given, or the given share of the JVM's maximum heap. */
  private static long memoryBudget(Builder b) {
    if (b.memoryBudgetBytes > 0) {
      return Check.atLeast(b.memoryBudgetBytes, 1 << 20, "memoryBudgetBytes");
    }
    Check.between(b.memoryBudgetHeapShare, 0.01, 0.9, "memoryBudgetHeapShare");
    return Math.max(1 << 20, (long) (Runtime.getRuntime().maxMemory() * b.memoryBudgetHeapShare));
  }

  private static String defaultReplicaId() {
    String host = System.getenv().getOrDefault("HOSTNAME", "ingester");
    return host + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * Redis URI: {@code redis://}, {@code rediss://} (TLS), {@code redis-cluster://}, {@code
   * redis-sentinel://}, user:password, or comma-separated.
   */
  public String redisUri() {
    return redisUri;
  }

  /** The CA certificates (PEM) of a {@code rediss} server, or null for the JVM's trust store. */
  public Path redisTlsCaFile() {
    return redisTlsCaFile;
  }

  /** The index namespace in Redis. */
  public String indexName() {
    return indexName;
  }

  /** Index groups (hash slots) the index spreads pods over; must match the index in Redis. */
  public int indexGroups() {
    return indexGroups;
  }

  /** Redis command (and connect) timeout. */
  public Duration redisTimeout() {
    return redisTimeout;
  }

  /** How long one write keeps retrying temporary Redis errors before it is swallowed. */
  public Duration redisRetryBudget() {
    return redisRetryBudget;
  }

  /** This replica's name in the registry and in lease ownership. */
  public String replicaId() {
    return replicaId;
  }

  public String httpHost() {
    return httpHost;
  }

  /** The HTTP port for /metrics, /healthz, /readyz; 0 picks a free one, -1 turns HTTP off. */
  public int httpPort() {
    return httpPort;
  }

  /** How long an HTTP client may take to send a request or take in its answer (process-wide). */
  public Duration httpReadTimeout() {
    return httpReadTimeout;
  }

  /** How long a kept-alive HTTP connection may stay idle (process-wide). */
  public Duration httpIdleTimeout() {
    return httpIdleTimeout;
  }

  /** Stream lease and replica registration lifetime; renewed every third of it. */
  public Duration leaseTtl() {
    return leaseTtl;
  }

  /** How often leases are renewed and rebalanced: a third of the lease TTL. */
  public Duration coordinationInterval() {
    return leaseTtl.dividedBy(3);
  }

  public Duration podLivenessTtl() {
    return podLivenessTtl;
  }

  public Duration replayIdleTimeout() {
    return replayIdleTimeout;
  }

  /**
   * A stream quiet this long asks the replay socket for anything after its watermark, so a lost
   * last batch (or the batches a new subscriber missed) is not left unapplied until the next one.
   */
  public Duration idleCatchUp() {
    return idleCatchUp;
  }

  /**
   * How often each model's stores are checked against the keys routers noted for it (at most one
   * {@code BlockStored} per model per interval); zero: never.
   */
  public Duration keyCheckInterval() {
    return keyCheckInterval;
  }

  public Duration reconnectMin() {
    return reconnectMin;
  }

  public Duration reconnectMax() {
    return reconnectMax;
  }

  public Duration retryMin() {
    return retryMin;
  }

  public Duration retryMax() {
    return retryMax;
  }

  public Duration reconcileInterval() {
    return reconcileInterval;
  }

  public Duration unreachableAfter() {
    return unreachableAfter;
  }

  public Duration scrapeTimeout() {
    return scrapeTimeout;
  }

  /** The largest {@code /metrics} page a scrape reads. */
  public long maxScrapeBytes() {
    return maxScrapeBytes;
  }

  public Duration gcInterval() {
    return gcInterval;
  }

  /** How long a pod's records outlive its liveness deadline before GC forgets them. */
  public Duration departedRetention() {
    return departedRetention;
  }

  /**
   * Whether a router's drift resync of a pod whose engine reports its capacity also makes the pod's
   * evictions inferred.
   */
  public boolean inferEvictions() {
    return inferEvictions;
  }

  /**
   * How late a stream whose evictions are inferred may apply its batches, through as long a stretch
   * of its engine's time, before it stops inferring because it cannot keep up.
   */
  public Duration inferenceLagLimit() {
    return inferenceLagLimit;
  }

  public int gcMaxSteps() {
    return gcMaxSteps;
  }

  /** Blocks one apply call writes at most; a larger batch takes several calls. */
  public int applyChunkBlocks() {
    return applyChunkBlocks;
  }

  public int maxPendingBatches() {
    return maxPendingBatches;
  }

  /** What the process, and each of its streams, may hold in memory. */
  public MemoryBounds memoryBounds() {
    return memoryBounds;
  }

  /** The watched discovery file, or {@code null}. */
  public Path discoveryFile() {
    return discoveryFile;
  }

  /** Pods given statically. */
  public List<PodSpec> pods() {
    return pods;
  }

  /** Where pods come from besides the static ones. */
  public Discovery discovery() {
    return discovery;
  }

  /** What Kubernetes discovery watches, when {@link #discovery()} is {@code KUBERNETES}. */
  public KubernetesOptions kubernetes() {
    return kubernetes;
  }

  /**
   * Builds an {@link IngesterConfig}, starting from the declared defaults; each argument is checked
   * at build time.
   */
  public static final class Builder {
    private String redisUri;
    private Path redisTlsCaFile;
    private String indexName;
    private int indexGroups;
    private Duration redisTimeout;
    private Duration redisRetryBudget;
    private String replicaId;
    private String httpHost;
    private int httpPort;
    private Duration httpReadTimeout;
    private Duration httpIdleTimeout;
    private Duration leaseTtl;
    private Duration podLivenessTtl;
    private Duration replayIdleTimeout;
    private Duration idleCatchUp;
    private Duration keyCheckInterval;
    private Duration reconnectMin;
    private Duration reconnectMax;
    private Duration retryMin;
    private Duration retryMax;
    private Duration reconcileInterval;
    private Duration unreachableAfter;
    private Duration scrapeTimeout;
    private long maxScrapeBytes;
    private Duration gcInterval;
    private Duration departedRetention;
    private boolean inferEvictions;
    private Duration inferenceLagLimit;
    private int gcMaxSteps;
    private int applyChunkBlocks;
    private int maxPendingBatches;
    private long maxPendingBytes;
    private long memoryBudgetBytes;
    private double memoryBudgetHeapShare;
    private int maxConcurrentReplays;
    private long maxReplayBytes;
    private long maxMessageBytes;
    private Path discoveryFile;
    private final List<PodSpec> pods = new ArrayList<>();
    private Discovery discovery;
    private List<String> kubernetesNamespaces = List.of();
    private String kubernetesLabelSelector;
    private Duration kubernetesNotReadyAfter;
    private KubernetesOptions.PodName kubernetesPodName;

    private Builder() {
      for (IngesterSetting s : IngesterSetting.values()) {
        if (s.setting.defaultValue() != null) {
          s.apply.accept(this, s.setting.defaultValue());
        }
      }
    }

    public Builder redisTlsCaFile(Path v) {
      redisTlsCaFile = v;
      return this;
    }

    public Builder redisUri(String v) {
      redisUri = v;
      return this;
    }

    public Builder indexName(String v) {
      indexName = v;
      return this;
    }

    public Builder indexGroups(int v) {
      indexGroups = v;
      return this;
    }

    public Builder redisTimeout(Duration v) {
      redisTimeout = v;
      return this;
    }

    public Builder redisRetryBudget(Duration v) {
      redisRetryBudget = v;
      return this;
    }

    public Builder replicaId(String v) {
      replicaId = v;
      return this;
    }

    public Builder httpHost(String v) {
      httpHost = v;
      return this;
    }

    public Builder httpPort(int v) {
      httpPort = v;
      return this;
    }

    public Builder httpReadTimeout(Duration v) {
      httpReadTimeout = v;
      return this;
    }

    public Builder httpIdleTimeout(Duration v) {
      httpIdleTimeout = v;
      return this;
    }

    public Builder leaseTtl(Duration v) {
      leaseTtl = v;
      return this;
    }

    public Builder podLivenessTtl(Duration v) {
      podLivenessTtl = v;
      return this;
    }

    public Builder replayIdleTimeout(Duration v) {
      replayIdleTimeout = v;
      return this;
    }

    public Builder idleCatchUp(Duration v) {
      idleCatchUp = v;
      return this;
    }

    public Builder keyCheckInterval(Duration v) {
      keyCheckInterval = v;
      return this;
    }

    public Builder reconnectMin(Duration v) {
      reconnectMin = v;
      return this;
    }

    public Builder reconnectMax(Duration v) {
      reconnectMax = v;
      return this;
    }

    public Builder retryMin(Duration v) {
      retryMin = v;
      return this;
    }

    public Builder retryMax(Duration v) {
      retryMax = v;
      return this;
    }

    public Builder reconcileInterval(Duration v) {
      reconcileInterval = v;
      return this;
    }

    public Builder unreachableAfter(Duration v) {
      unreachableAfter = v;
      return this;
    }

    public Builder scrapeTimeout(Duration v) {
      scrapeTimeout = v;
      return this;
    }

    public Builder maxScrapeBytes(long v) {
      maxScrapeBytes = v;
      return this;
    }

    public Builder departedRetention(Duration v) {
      departedRetention = v;
      return this;
    }

    public Builder inferEvictions(boolean v) {
      inferEvictions = v;
      return this;
    }

    public Builder inferenceLagLimit(Duration v) {
      inferenceLagLimit = v;
      return this;
    }

    public Builder gcInterval(Duration v) {
      gcInterval = v;
      return this;
    }

    public Builder gcMaxSteps(int v) {
      gcMaxSteps = v;
      return this;
    }

    public Builder applyChunkBlocks(int v) {
      applyChunkBlocks = v;
      return this;
    }

    public Builder maxPendingBatches(int v) {
      maxPendingBatches = v;
      return this;
    }

    public Builder maxPendingBytes(long v) {
      maxPendingBytes = v;
      return this;
    }

    /** The process's memory budget in bytes (instead of a share of the heap). */
    public Builder memoryBudgetBytes(long v) {
      memoryBudgetBytes = v;
      memoryBudgetHeapShare = 0;
      return this;
    }

    /** The process's memory budget as a share of the JVM's maximum heap, in (0.01, 0.9]. */
    public Builder memoryBudgetHeapShare(double v) {
      memoryBudgetHeapShare = v;
      memoryBudgetBytes = 0;
      return this;
    }

    public Builder maxConcurrentReplays(int v) {
      maxConcurrentReplays = v;
      return this;
    }

    public Builder maxReplayBytes(long v) {
      maxReplayBytes = v;
      return this;
    }

    public Builder maxMessageBytes(long v) {
      maxMessageBytes = v;
      return this;
    }

    public Builder discoveryFile(Path v) {
      discoveryFile = v;
      return this;
    }

    public Builder pod(PodSpec spec) {
      pods.add(Objects.requireNonNull(spec, "pod"));
      return this;
    }

    public Builder pods(List<PodSpec> specs) {
      specs.forEach(this::pod);
      return this;
    }

    public Builder discovery(Discovery v) {
      discovery = v;
      return this;
    }

    /** Namespaces watched; none means the ingester's own. */
    public Builder kubernetesNamespaces(List<String> v) {
      kubernetesNamespaces = List.copyOf(v);
      return this;
    }

    public Builder kubernetesLabelSelector(String v) {
      kubernetesLabelSelector = v;
      return this;
    }

    public Builder kubernetesNotReadyAfter(Duration v) {
      kubernetesNotReadyAfter = v;
      return this;
    }

    public Builder kubernetesPodName(KubernetesOptions.PodName v) {
      kubernetesPodName = v;
      return this;
    }

    public IngesterConfig build() {
      return new IngesterConfig(this);
    }
  }
}
