package io.kvindex.simulator;

import io.kvindex.simulator.engine.ChainHasher;
import io.kvindex.simulator.engine.ChainHashers;
import io.kvindex.simulator.engine.Engine;
import io.kvindex.simulator.http.PodHttpServer;
import io.kvindex.simulator.wire.EventPublisher;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.zeromq.ZContext;
import org.zeromq.ZMQException;

/** The {@link SimulatedPod} implementation. Thread-safe. */
final class DefaultSimulatedPod implements SimulatedPod {
  private static final int BIND_ATTEMPTS = 20;

  private final PodConfig config;
  private final ZContext context;
  private final List<Engine> engines;
  private final List<StreamEndpoints> endpoints;
  private final FaultKnobs faults;
  private final AtomicInteger nextRank = new AtomicInteger();
  private final PodHttpServer http;
  private volatile boolean closed;

  private DefaultSimulatedPod(
      PodConfig config, ZContext context, List<Engine> engines, FaultKnobs faults) {
    this.config = config;
    this.context = context;
    this.engines = List.copyOf(engines);
    this.faults = faults;
    List<StreamEndpoints> list = new ArrayList<>();
    for (Engine e : engines) {
      EventPublisher p = e.publisher();
      list.add(
          new StreamEndpoints(
              config.name(),
              e.rank(),
              p.publishEndpoint(),
              config.publishBind(),
              p.replayEndpoint(),
              config.topic()));
    }
    this.endpoints = List.copyOf(list);
    this.http = config.http() ? PodHttpServer.start(this, config.httpBind()) : null;
  }

  static SimulatedPod start(PodConfig config) {
    ZContext context = new ZContext();
    FaultKnobs faults = new FaultKnobs();
    try {
      List<EventPublisher> publishers = openPublishers(context, config, faults);
      List<Engine> engines = new ArrayList<>();
      Random seeds = new Random(config.seed());
      for (int rank = 0; rank < publishers.size(); rank++) {
        engines.add(
            new Engine(
                config.name(),
                rank,
                config,
                hashers(config, seeds.nextLong()),
                publishers.get(rank),
                faults));
      }
      return new DefaultSimulatedPod(config, context, engines, faults);
    } catch (RuntimeException e) {
      context.close();
      throw e;
    }
  }

  private static Supplier<ChainHasher> hashers(PodConfig config, long seed) {
    if (config.hashMode() == HashMode.ENGINE) {
      ChainHasher fixed =
          ChainHashers.engine(
              config.hashAlgorithm(), config.hashSeed(), config.blockSize(), config.era());
      return () -> fixed;
    }
    Random random = new Random(seed);
    return () -> ChainHashers.random(random.nextLong(), config.blockSize(), config.era());
  }

  /** Opens one publisher per rank on port + rank, retrying other ports when binding port 0. */
  private static List<EventPublisher> openPublishers(
      ZContext context, PodConfig config, FaultKnobs faults) {
    boolean anyPort =
        (config.publishBind() && TcpEndpoint.port(config.publishEndpoint()) == 0)
            || (config.replayEndpoint() != null && TcpEndpoint.port(config.replayEndpoint()) == 0);
    RuntimeException last = null;
    for (int attempt = 0; attempt < (anyPort ? BIND_ATTEMPTS : 1); attempt++) {
      List<EventPublisher> opened = new ArrayList<>();
      try {
        String publish = config.publishEndpoint();
        String replay = config.replayEndpoint();
        for (int rank = 0; rank < config.dataParallelSize(); rank++) {
          EventPublisher p =
              new EventPublisher(
                  context,
                  config.name() + "/" + rank,
                  rank == 0 ? publish : offset(publish, rank),
                  config.publishBind(),
                  replay == null ? null : rank == 0 ? replay : offset(replay, rank),
                  config,
                  faults,
                  config.seed() * 31 + rank);
          opened.add(p);
          if (rank == 0) {
            publish = config.publishBind() ? p.publishEndpoint() : publish;
            replay = p.replayEndpoint();
          }
        }
        return opened;
      } catch (ZMQException | IllegalArgumentException e) {
        opened.forEach(EventPublisher::close);
        last = e;
      }
    }
    throw new IllegalStateException(
        "pod " + config.name() + ": could not open its ZMQ endpoints: " + last.getMessage(), last);
  }

  /** vLLM's {@code offset_endpoint_port}: port + rank. */
  static String offset(String endpoint, int rank) {
    return TcpEndpoint.withPort(endpoint, TcpEndpoint.port(endpoint) + rank);
  }

  @Override
  public PodConfig config() {
    return config;
  }

  @Override
  public List<StreamEndpoints> endpoints() {
    return endpoints;
  }

  @Override
  public URI httpAddress() {
    return http == null ? null : http.address();
  }

  @Override
  public Completion submit(InferenceRequest request) {
    int rank = Math.floorMod(nextRank.getAndIncrement(), engines.size());
    return submit(request, rank);
  }

  @Override
  public Completion submit(InferenceRequest request, int rank) {
    if (closed) {
      throw new PodUnavailableException("pod " + config.name() + " is closed");
    }
    return engine(rank).submit(request);
  }

  @Override
  public io.kvindex.simulator.engine.StepScheduler scheduler(
      int rank, io.kvindex.simulator.engine.EngineTiming timing) {
    return new io.kvindex.simulator.engine.StepScheduler(engine(rank), config.name(), timing);
  }

  @Override
  public long inject(int rank, byte[] payload) {
    return engine(rank).inject(payload);
  }

  @Override
  public Map<String, java.util.Set<Long>> cachedBlocks(int rank) {
    return engine(rank).cachedBlocks();
  }

  @Override
  public Map<Integer, java.util.Set<Long>> cachedGroupBlocks(int rank) {
    return engine(rank).cachedGroupBlocks();
  }

  @Override
  public CachedPrefix cachedPrefix(InferenceRequest request, int rank) {
    return engine(rank).cachedPrefix(request);
  }

  @Override
  public boolean resetPrefixCache() {
    boolean ok = true;
    for (Engine e : engines) {
      ok &= e.resetPrefixCache();
    }
    return ok;
  }

  @Override
  public void sleep(int level) {
    engines.forEach(e -> e.sleep(level));
  }

  @Override
  public void wakeUp() {
    engines.forEach(Engine::wakeUp);
  }

  @Override
  public boolean isSleeping() {
    return sleepLevel() != null;
  }

  @Override
  public Integer sleepLevel() {
    return engines.get(0).sleepLevel();
  }

  @Override
  public void restart() {
    engines.forEach(Engine::restart);
  }

  @Override
  public FaultKnobs faults() {
    return faults;
  }

  @Override
  public long nextSequence(int rank) {
    return engine(rank).nextSeq();
  }

  @Override
  public Instant processStartTime() {
    return engines.get(0).startTime();
  }

  @Override
  public void addBatchListener(int rank, Engine.BatchListener listener) {
    engine(rank).addListener(listener);
  }

  void addListener(Engine.BatchListener listener) {
    engines.forEach(e -> e.addListener(listener));
  }

  private Engine engine(int rank) {
    if (rank < 0 || rank >= engines.size()) {
      throw new IllegalArgumentException(
          "rank must be within [0, "
              + engines.size()
              + ") for pod "
              + config.name()
              + ", got "
              + rank);
    }
    return engines.get(rank);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (http != null) {
      http.close();
    }
    engines.forEach(e -> e.publisher().close());
    context.close();
  }

  @Override
  public String toString() {
    return "SimulatedPod[" + config.name() + ", " + endpoints + "]";
  }
}
