package io.kvindex.simulator;

import io.kvindex.hash.HashAlgorithm;
import io.kvindex.wire.HashEncoding;
import io.kvindex.wire.KvEventEncoder;
import io.kvindex.wire.ReplayFraming;
import io.kvindex.wire.WireEra;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.Objects;

/**
 * The settings of one simulated vLLM pod; build with {@link #builder()}. Immutable and thread-safe.
 * Every default is listed on the builder's setters.
 */
public final class PodConfig {
  private final String name;
  private final String model;
  private final int capacityBlocks;
  private final int cpuCapacityBlocks;
  private final int blockSize;
  private final int dataParallelSize;
  private final String publishEndpoint;
  private final boolean publishBind;
  private final String replayEndpoint;
  private final int replayBufferSteps;
  private final ReplayFraming replayFraming;
  private final String topic;
  private final int highWaterMark;
  private final HashMode hashMode;
  private final HashAlgorithm hashAlgorithm;
  private final String hashSeed;
  private final boolean http;
  private final InetSocketAddress httpBind;
  private final long seed;
  private final InstantSource clock;
  private final WireEra era;
  private final HashEncoding hashEncoding;
  private final ModelKind modelKind;

  private PodConfig(Builder b) {
    this.name = b.name;
    this.model = b.model;
    this.capacityBlocks = b.capacityBlocks;
    this.cpuCapacityBlocks = b.cpuCapacityBlocks;
    this.blockSize = b.blockSize;
    this.dataParallelSize = b.dataParallelSize;
    this.publishEndpoint = b.publishEndpoint;
    this.publishBind = b.publishBind;
    this.replayEndpoint = b.replayEndpoint;
    this.replayBufferSteps = b.replayBufferSteps;
    this.replayFraming = b.replayFraming;
    this.topic = b.topic;
    this.highWaterMark = b.highWaterMark;
    this.hashMode = b.hashMode;
    this.hashAlgorithm = b.hashAlgorithm;
    this.hashSeed = b.hashSeed;
    this.http = b.http;
    this.httpBind = b.httpBind;
    this.seed = b.seed;
    this.clock = b.clock;
    this.era = b.era;
    this.hashEncoding = b.hashEncoding;
    this.modelKind = b.modelKind;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this config's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.name = name;
    b.model = model;
    b.capacityBlocks = capacityBlocks;
    b.cpuCapacityBlocks = cpuCapacityBlocks;
    b.blockSize = blockSize;
    b.dataParallelSize = dataParallelSize;
    b.publishEndpoint = publishEndpoint;
    b.publishBind = publishBind;
    b.replayEndpoint = replayEndpoint;
    b.replayBufferSteps = replayBufferSteps;
    b.replayFraming = replayFraming;
    b.topic = topic;
    b.highWaterMark = highWaterMark;
    b.hashMode = hashMode;
    b.hashAlgorithm = hashAlgorithm;
    b.hashSeed = hashSeed;
    b.http = http;
    b.httpBind = httpBind;
    b.seed = seed;
    b.clock = clock;
    b.era = era;
    b.hashEncoding = hashEncoding;
    b.modelKind = modelKind;
    return b;
  }

  public String name() {
    return name;
  }

  public String model() {
    return model;
  }

  public int capacityBlocks() {
    return capacityBlocks;
  }

  public int cpuCapacityBlocks() {
    return cpuCapacityBlocks;
  }

  public int blockSize() {
    return blockSize;
  }

  public int dataParallelSize() {
    return dataParallelSize;
  }

  public String publishEndpoint() {
    return publishEndpoint;
  }

  public boolean publishBind() {
    return publishBind;
  }

  /** The replay ROUTER endpoint to bind, or {@code null} when replay is off. */
  public String replayEndpoint() {
    return replayEndpoint;
  }

  public int replayBufferSteps() {
    return replayBufferSteps;
  }

  public ReplayFraming replayFraming() {
    return replayFraming;
  }

  public String topic() {
    return topic;
  }

  public int highWaterMark() {
    return highWaterMark;
  }

  public HashMode hashMode() {
    return hashMode;
  }

  /** The engines' {@code --prefix-caching-hash-algo} in {@link HashMode#ENGINE}. */
  public HashAlgorithm hashAlgorithm() {
    return hashAlgorithm;
  }

  /** The engines' {@code PYTHONHASHSEED}, or {@code null} when it is not set. */
  public String hashSeed() {
    return hashSeed;
  }

  public boolean http() {
    return http;
  }

  /** Where the pod's HTTP endpoint binds (port 0: a free port). */
  public InetSocketAddress httpBind() {
    return httpBind;
  }

  public long seed() {
    return seed;
  }

  public InstantSource clock() {
    return clock;
  }

  public WireEra era() {
    return era;
  }

  /** The engines' cache groups. */
  public ModelKind modelKind() {
    return modelKind;
  }

  /** The payload encoder for this pod's era and hash encoding. */
  public KvEventEncoder encoder() {
    return KvEventEncoder.of(era, hashEncoding);
  }

  /** Builds a {@link PodConfig}; each setter checks its argument at once. Not thread-safe. */
  public static final class Builder {
    private String name = "pod-0";
    private String model = "sim-model";
    private int capacityBlocks = 32_768;
    private int cpuCapacityBlocks = 0;
    private int blockSize = 16;
    private int dataParallelSize = 1;
    private String publishEndpoint = "tcp://127.0.0.1:0";
    private boolean publishBind = true;
    private String replayEndpoint = "tcp://127.0.0.1:0";
    private int replayBufferSteps = 10_000;
    private ReplayFraming replayFraming = ReplayFraming.WITH_TOPIC;
    private String topic = "";
    private int highWaterMark = 100_000;
    private HashMode hashMode = HashMode.ENGINE;
    private HashAlgorithm hashAlgorithm = HashAlgorithm.SHA256_CBOR;
    private String hashSeed = "0";
    private boolean http = true;
    private InetSocketAddress httpBind = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private long seed = 1;
    private InstantSource clock = InstantSource.system();
    private WireEra era = WireEra.MAP;
    private HashEncoding hashEncoding = HashEncoding.UINT64;
    private ModelKind modelKind = ModelKind.FULL;

    private Builder() {}

    /** The pod's name, used in logs, topics you choose and ground truth. Default {@code pod-0}. */
    public Builder name(String name) {
      this.name = nonBlank(name, "name");
      return this;
    }

    /** The served model name ({@code model_name} metric label). Default {@code sim-model}. */
    public Builder model(String model) {
      this.model = nonBlank(model, "model");
      return this;
    }

    /** GPU KV-cache capacity per engine, in blocks. Default 32,768 (512K tokens of 16). */
    public Builder capacityBlocks(int capacityBlocks) {
      this.capacityBlocks = positive(capacityBlocks, "capacityBlocks");
      return this;
    }

    /** CPU offload tier capacity per engine, in blocks; 0 turns the tier off. Default 0. */
    public Builder cpuCapacityBlocks(int cpuCapacityBlocks) {
      if (cpuCapacityBlocks < 0) {
        throw new IllegalArgumentException(
            "cpuCapacityBlocks must be >= 0 (0 = no CPU tier), got " + cpuCapacityBlocks);
      }
      this.cpuCapacityBlocks = cpuCapacityBlocks;
      return this;
    }

    /** Tokens per block ({@code --block-size}). Default 16. */
    public Builder blockSize(int blockSize) {
      this.blockSize = positive(blockSize, "blockSize");
      return this;
    }

    /** Data-parallel engines in the pod, each its own stream on port + rank. Default 1. */
    public Builder dataParallelSize(int dataParallelSize) {
      this.dataParallelSize = positive(dataParallelSize, "dataParallelSize");
      return this;
    }

    /**
     * Binds the PUB socket (port 0 picks a free port; ranks use port + rank). Default {@code
     * tcp://127.0.0.1:0}.
     */
    public Builder publishBind(String endpoint) {
      this.publishEndpoint = TcpEndpoint.check(endpoint, "publishBind");
      this.publishBind = true;
      return this;
    }

    /**
     * Connects the PUB socket out to a collector that binds a SUB socket, as vLLM does for {@code
     * tcp://host:port}; ranks connect to port + rank.
     */
    public Builder publishConnect(String endpoint) {
      this.publishEndpoint = TcpEndpoint.check(endpoint, "publishConnect");
      if (TcpEndpoint.port(publishEndpoint) == 0) {
        throw new IllegalArgumentException("publishConnect needs a real port, got " + endpoint);
      }
      this.publishBind = false;
      return this;
    }

    /**
     * The replay ROUTER endpoint to bind, or {@code null} to turn replay off. Default {@code
     * tcp://127.0.0.1:0}.
     */
    public Builder replayBind(String endpoint) {
      this.replayEndpoint = endpoint == null ? null : TcpEndpoint.check(endpoint, "replayBind");
      return this;
    }

    /** Batches the replay ring holds ({@code buffer_steps}). Default 10,000. */
    public Builder replayBufferSteps(int steps) {
      this.replayBufferSteps = positive(steps, "replayBufferSteps");
      return this;
    }

    /** Replay framing. Default {@link ReplayFraming#WITH_TOPIC} (vLLM PR #45177 and later). */
    public Builder replayFraming(ReplayFraming framing) {
      this.replayFraming = Objects.requireNonNull(framing, "replayFraming");
      return this;
    }

    /** The topic frame. Default empty, as vLLM's. */
    public Builder topic(String topic) {
      this.topic = Objects.requireNonNull(topic, "topic");
      return this;
    }

    /** Block hashing. Default {@link HashMode#ENGINE}. */
    public Builder hashMode(HashMode mode) {
      this.hashMode = Objects.requireNonNull(mode, "hashMode");
      return this;
    }

    /** {@code --prefix-caching-hash-algo} for {@link HashMode#ENGINE}. Default sha256_cbor. */
    public Builder hashAlgorithm(HashAlgorithm hashAlgorithm) {
      this.hashAlgorithm = Objects.requireNonNull(hashAlgorithm, "hashAlgorithm");
      return this;
    }

    /**
     * {@code PYTHONHASHSEED} for {@link HashMode#ENGINE}, or {@code null} for engines started
     * without it (vLLM's default seed for the algorithm). Default {@code "0"}.
     */
    public Builder hashSeed(String hashSeed) {
      this.hashSeed = hashSeed;
      return this;
    }

    /** Whether to start the pod's HTTP endpoint (at {@link #httpBind}). Default true. */
    public Builder http(boolean http) {
      this.http = http;
      return this;
    }

    /**
     * Where the pod's HTTP endpoint binds, such as 0.0.0.0 for a collector on another host; port 0
     * picks a free port. Default 127.0.0.1, a free port.
     */
    public Builder httpBind(InetSocketAddress address) {
      this.httpBind = Objects.requireNonNull(address, "httpBind");
      return this;
    }

    /** Seeds the fault knobs' randomness and {@link HashMode#RANDOM}. Default 1. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** The clock for batch timestamps and the process start time. Default the system clock. */
    public Builder clock(InstantSource clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** The payload layout, as a vLLM version emits it. Default {@link WireEra#MAP} (v0.23+). */
    public Builder era(WireEra era) {
      this.era = Objects.requireNonNull(era, "era");
      return this;
    }

    /** How hashes go on the wire. Default {@link HashEncoding#UINT64}. */
    public Builder hashEncoding(HashEncoding hashEncoding) {
      this.hashEncoding = Objects.requireNonNull(hashEncoding, "hashEncoding");
      return this;
    }

    /**
     * The engines' cache groups: one full-attention group, or a hybrid model's two. Default {@link
     * ModelKind#FULL}.
     */
    public Builder modelKind(ModelKind modelKind) {
      this.modelKind = Objects.requireNonNull(modelKind, "modelKind");
      return this;
    }

    public PodConfig build() {
      if (modelKind.hybrid() && cpuCapacityBlocks > 0) {
        throw new IllegalArgumentException(
            "a hybrid model's engines have no CPU tier here; use cpuCapacityBlocks 0 with model"
                + " kind "
                + modelKind.option());
      }
      if (modelKind.hybrid() && era.compareTo(WireEra.V0_22) < 0) {
        throw new IllegalArgumentException(
            "a hybrid model's events need group_idx and kv_cache_spec_kind, which era "
                + era
                + " does not carry; use era V0_22 or later with model kind "
                + modelKind.option());
      }
      if (topic.getBytes(StandardCharsets.UTF_8).length > 1024) {
        throw new IllegalArgumentException("topic is too long (over 1024 bytes)");
      }
      if (cpuCapacityBlocks > 0 && era.compareTo(WireEra.V0_10_2) < 0) {
        throw new IllegalArgumentException(
            "a CPU tier needs the medium field, which era "
                + era
                + " does not carry; use era V0_10_2 or later, or cpuCapacityBlocks 0");
      }
      return new PodConfig(this);
    }

    private static String nonBlank(String value, String name) {
      if (value == null || value.isBlank()) {
        throw new IllegalArgumentException(name + " must not be blank");
      }
      return value;
    }

    private static int positive(int value, String name) {
      if (value < 1) {
        throw new IllegalArgumentException(name + " must be >= 1, got " + value);
      }
      return value;
    }
  }
}
