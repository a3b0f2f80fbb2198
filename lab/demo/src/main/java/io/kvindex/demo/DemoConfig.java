package io.kvindex.demo;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * What {@code kvindex demo} runs: the fleet, the workload and where Redis is. Immutable and
 * thread-safe; build with {@link #builder()}. Every default is in docs/configuration.md.
 */
public final class DemoConfig {
  private final String redisUri;
  private final int pods;
  private final Duration duration;
  private final Path trace;
  private final double requestsPerSecond;
  private final int capacityBlocks;
  private final long seed;
  private final Double speed;
  private final Fault fault;
  private final boolean closedLoop;
  private final Via via;
  private final io.kvindex.simulator.ModelKind modelKind;

  /** A fault the demo can inject into every pod, on top of its midway ones. */
  public enum Fault {
    /** None beyond the midway ones. */
    NONE,
    /**
     * From a quarter of the run on, every engine evicts without publishing the BlockRemoved, live
     * and in its replay ring alike: only the closed loop can see it.
     */
    SILENT_EVICTION;

    /** By its command-line name: {@code none} or {@code silent-eviction}. */
    public static Fault named(String name) {
      for (Fault f : values()) {
        if (f.cliName().equals(name)) {
          return f;
        }
      }
      throw new IllegalArgumentException("fault must be none or silent-eviction, got " + name);
    }

    public String cliName() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
  }

  /**
   * How the gateway's requests reach kvindex: the routers' {@code POST /score} and {@code POST
   * /observe}, or the endpoint picker (Envoy's external processing protocol, the proxy's part
   * played in-process), which reads the engines' usage from the responses itself.
   */
  public enum Via {
    SCORE,
    EPP;

    /**
     * The one named on the command line.
     *
     * @throws IllegalArgumentException if none is
     */
    public static Via named(String name) {
      for (Via v : values()) {
        if (v.cliName().equals(name)) {
          return v;
        }
      }
      throw new IllegalArgumentException("--via must be score or epp, got " + name);
    }

    /** Its name on the command line. */
    public String cliName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private DemoConfig(Builder b) {
    this.redisUri = b.redisUri;
    this.pods = b.pods;
    this.duration = b.duration;
    this.trace = b.trace;
    this.requestsPerSecond = b.requestsPerSecond;
    this.capacityBlocks = b.capacityBlocks;
    this.seed = b.seed;
    this.speed = b.speed;
    this.fault = b.fault;
    this.closedLoop = b.closedLoop;
    this.via = b.via;
    this.modelKind = b.modelKind;
  }

  /**
   * The pods' model: its engines' cache groups. Default {@link
   * io.kvindex.simulator.ModelKind#FULL}.
   */
  public io.kvindex.simulator.ModelKind modelKind() {
    return modelKind;
  }

  /**
   * With a trace, the factor its timestamps are compressed by (requests then arrive as the trace
   * says, not at {@link #requestsPerSecond}), or {@code null} to pace at the rate.
   */
  public Double speed() {
    return speed;
  }

  /** The fault injected into every pod, {@link Fault#NONE} by default. */
  public Fault fault() {
    return fault;
  }

  /**
   * Whether the routers act on what the engines report ({@code POST /observe}): a pod found
   * over-predicted is resynced, and its ingester infers its engine's evictions from then on. Off,
   * the observations are still counted. Default on, as in the router.
   */
  public boolean closedLoop() {
    return closedLoop;
  }

  /** How the gateway reaches kvindex. */
  public Via via() {
    return via;
  }

  /** Whether this is the full default run whose kvindex/oracle ratio is checked. */
  boolean fullDefaultRun() {
    return trace == null && fault == Fault.NONE && duration.compareTo(Duration.ofSeconds(40)) >= 0;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** An existing Redis or Redis Cluster, or {@code null} to start the embedded Redis. */
  public String redisUri() {
    return redisUri;
  }

  /** Simulated pods in the fleet. */
  public int pods() {
    return pods;
  }

  /** How long requests are routed through kvindex (the baselines replay the same requests). */
  public Duration duration() {
    return duration;
  }

  /** A Mooncake-format trace to replay, or {@code null} for the built-in multi-tenant workload. */
  public Path trace() {
    return trace;
  }

  /** The offered load while routing through kvindex. */
  public double requestsPerSecond() {
    return requestsPerSecond;
  }

  /** Each simulated pod's GPU KV-cache capacity, in blocks. */
  public int capacityBlocks() {
    return capacityBlocks;
  }

  /** Seeds the workload and the random baseline, so that runs repeat. */
  public long seed() {
    return seed;
  }

  /**
   * How many requests the run offers: the duration at the offered load, or with a trace all of its
   * requests.
   */
  int requestCount() {
    if (trace != null) {
      return MAX_TRACE_REQUESTS;
    }
    return (int) Math.max(1, Math.round(duration.toMillis() / 1000.0 * requestsPerSecond));
  }

  /** The most requests of a trace a run replays. */
  static final int MAX_TRACE_REQUESTS = 1_000_000;

  /** Builds a {@link DemoConfig}; each setter checks its argument at once. Not thread-safe. */
  public static final class Builder {
    private String redisUri;
    private int pods = 8;
    private Duration duration = Duration.ofSeconds(40);
    private Path trace;
    private double requestsPerSecond = 150;
    private int capacityBlocks = 1024;
    private long seed = 7;
    private Double speed;
    private Fault fault = Fault.NONE;
    private boolean closedLoop = true;
    private Via via = Via.SCORE;
    private io.kvindex.simulator.ModelKind modelKind = io.kvindex.simulator.ModelKind.FULL;

    private Builder() {}

    /** Default none: pace at the rate. */
    public Builder speed(Double speed) {
      if (speed != null && !(speed > 0 && speed <= 1_000_000)) {
        throw new IllegalArgumentException("speed must be within (0, 1000000], got " + speed);
      }
      this.speed = speed;
      return this;
    }

    /** Default {@link Fault#NONE}. */
    public Builder fault(Fault fault) {
      this.fault = Objects.requireNonNull(fault, "fault");
      return this;
    }

    /**
     * The pods' model: one full-attention cache group, or a hybrid's (a sliding window, Mamba).
     * Default {@link io.kvindex.simulator.ModelKind#FULL}.
     */
    public Builder modelKind(io.kvindex.simulator.ModelKind kind) {
      this.modelKind = Objects.requireNonNull(kind, "modelKind");
      return this;
    }

    /** Default {@link Via#SCORE}. */
    public Builder via(Via via) {
      this.via = Objects.requireNonNull(via, "via");
      return this;
    }

    /** Whether the routers resync suspect pods (every 5 s at most per pod). Default false. */
    public Builder closedLoop(boolean on) {
      this.closedLoop = on;
      return this;
    }

    /**
     * {@code redis://host:port}, {@code rediss://...}, a cluster's seed URIs or a {@code
     * redis-sentinel://} URI. Default embedded.
     */
    public Builder redisUri(String uri) {
      if (uri != null && uri.isBlank()) {
        throw new IllegalArgumentException("redisUri must not be blank; leave it out for embedded");
      }
      this.redisUri = uri;
      return this;
    }

    /** Default 8. */
    public Builder pods(int pods) {
      if (pods < 2 || pods > 256) {
        throw new IllegalArgumentException("pods must be within [2, 256], got " + pods);
      }
      this.pods = pods;
      return this;
    }

    /** Default 40 s. */
    public Builder duration(Duration duration) {
      Objects.requireNonNull(duration, "duration");
      if (duration.toMillis() < 1000 || duration.toMinutes() > 60) {
        throw new IllegalArgumentException(
            "duration must be within [1s, 60m], got " + duration.toMillis() + " ms");
      }
      this.duration = duration;
      return this;
    }

    /** Default none: the built-in workload. */
    public Builder trace(Path trace) {
      if (trace != null && !Files.isReadable(trace)) {
        throw new IllegalArgumentException(
            "trace " + trace + " is not a readable file; give a Mooncake-format JSONL trace");
      }
      this.trace = trace;
      return this;
    }

    /** Default 150. */
    public Builder requestsPerSecond(double rate) {
      if (!(rate > 0 && rate <= 100_000)) {
        throw new IllegalArgumentException(
            "requestsPerSecond must be within (0, 100000], got " + rate);
      }
      this.requestsPerSecond = rate;
      return this;
    }

    /** Default 7. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    public DemoConfig build() {
      if (speed != null && trace == null) {
        throw new IllegalArgumentException(
            "speed compresses a trace's timestamps: give --trace too, or pace with --rate");
      }
      return new DemoConfig(this);
    }
  }
}
