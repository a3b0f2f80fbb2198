package io.kvindex.simulator;

import java.net.URI;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A simulated vLLM pod: one engine per data-parallel rank, each with a prefix-cached KV pool
 * publishing KV events on a real ZeroMQ PUB socket exactly as vLLM does, a replay ROUTER, an HTTP
 * endpoint, and the ground truth of what it caches.
 *
 * <pre>{@code
 * try (SimulatedPod pod = SimulatedPod.start(PodConfig.builder().name("pod-a").build())) {
 *   String pub = pod.endpoints().get(0).publish();   // subscribe here
 *   Completion c = pod.submit(request);
 *   Set<Long> gpu = pod.cachedBlocks(0, "GPU");
 * }
 * }</pre>
 *
 * <p>Thread-safe: requests and operations on one engine are serialised; engines run independently.
 */
public interface SimulatedPod extends AutoCloseable {

  /** Opens the sockets (and HTTP endpoint) and returns the running pod. */
  static SimulatedPod start(PodConfig config) {
    return DefaultSimulatedPod.start(config);
  }

  PodConfig config();

  default String name() {
    return config().name();
  }

  default String model() {
    return config().model();
  }

  /** One entry per data-parallel rank, in rank order. */
  List<StreamEndpoints> endpoints();

  /**
   * The HTTP endpoint's base address ({@code http://host:port}, 127.0.0.1 unless {@link
   * PodConfig.Builder#httpBind} says otherwise), or {@code null} if off.
   */
  URI httpAddress();

  /**
   * Serves a request on the next rank (round robin), publishing the events of each engine step.
   *
   * @throws PodUnavailableException if the pod is asleep or closed
   * @throws RequestTooLargeException if the request needs more blocks than an engine has
   */
  Completion submit(InferenceRequest request);

  /** Serves a request on the given rank. */
  Completion submit(InferenceRequest request, int rank);

  /**
   * A scheduler that serves requests on the rank's engine in simulated time (vLLM's scheduling loop
   * with {@code timing}'s limits and step costs), publishing each step's events as the instant
   * {@link #submit} does. Each call makes a new scheduler: use one per rank and run.
   */
  io.kvindex.simulator.engine.StepScheduler scheduler(
      int rank, io.kvindex.simulator.engine.EngineTiming timing);

  /**
   * Ground truth: the hashes the rank's engine caches, per tier ({@code GPU}, {@code CPU}); of a
   * hybrid model, those of its full-attention group.
   */
  Map<String, Set<Long>> cachedBlocks(int rank);

  /**
   * Ground truth per cache group: the GPU hashes the rank's engine caches in each group (0, full
   * attention; 1, a hybrid model's other group). {@link #cachedBlocks(int)} holds group 0's.
   */
  Map<Integer, Set<Long>> cachedGroupBlocks(int rank);

  /** Ground truth for one tier of one rank (empty for a tier the engine does not have). */
  default Set<Long> cachedBlocks(int rank, String tier) {
    return cachedBlocks(rank).getOrDefault(tier, Set.of());
  }

  /**
   * Ground truth for routing: what the rank's engine holds of the request's prompt now, from block
   * 0 on, hashed with the engine's own hasher (so it is right in every hash mode). Of a hybrid
   * model, the hit its coordinator would find (at most the prompt's length minus one token), in GPU
   * blocks.
   */
  CachedPrefix cachedPrefix(InferenceRequest request, int rank);

  /**
   * Resets every rank's prefix cache; the AllBlocksCleared goes out with each engine's next step,
   * as vLLM's does. Returns true (requests are instantaneous, so no block is ever in use).
   */
  boolean resetPrefixCache();

  /** Sleeps every rank: level 1 and 2 clear the cache, level 0 only pauses. */
  void sleep(int level);

  void wakeUp();

  boolean isSleeping();

  /** The sleep level, or {@code null} when awake. */
  Integer sleepLevel();

  /**
   * Restarts every engine: empty cache, sequence numbers from 0, an empty replay ring, a new
   * process start time, and no AllBlocksCleared. The sockets stay on their endpoints.
   */
  void restart();

  /**
   * Publishes a payload the engine did not produce as the rank's next batch, live and in its replay
   * ring (hostile or malformed input); what the engine caches is unchanged.
   *
   * @return the batch's sequence number
   */
  long inject(int rank, byte[] payload);

  /**
   * Hands {@code listener} every batch the rank's engine publishes from now on, in order, on the
   * engine's thread while it publishes (so the engine waits for it: keep it quick): a log of what
   * the engine's cache did, exact to the batch, that a periodic look at {@link #cachedBlocks} is
   * not. Injected payloads ({@link #inject}) are not the engine's and are not handed over.
   */
  void addBatchListener(int rank, io.kvindex.simulator.engine.Engine.BatchListener listener);

  /** The live-stream faults, shared by all ranks. */
  FaultKnobs faults();

  /** The sequence number the rank's next batch gets (= batches published since start). */
  long nextSequence(int rank);

  /** When the (simulated) process started; changes on {@link #restart()}. */
  Instant processStartTime();

  /** Stops publishing and closes the sockets and the HTTP endpoint. */
  @Override
  void close();
}
