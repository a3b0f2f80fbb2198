package io.kvindex.ingester;

import io.kvindex.index.PrefixIndex;
import io.kvindex.ingester.keycheck.KeyChecks;
import io.kvindex.ingester.stream.MemoryBudget;
import java.time.InstantSource;
import java.util.function.LongSupplier;
import org.zeromq.ZContext;

/**
 * What every part of one ingester shares. Immutable holder of thread-safe parts.
 *
 * @param config the settings
 * @param zmq the ZeroMQ context (sockets made from it stay on their creating thread)
 * @param index the shared index
 * @param metrics the meters
 * @param faults the fault hook every write passes ({@link FaultHook#NONE} but in tests and drills)
 * @param clock wall time, for the lag metric
 * @param ticker monotonic nanoseconds, for every timeout and backoff ({@link System#nanoTime})
 * @param memory the process's memory budget, which every stream's batches and sockets count in
 * @param keyChecks the check of the engines' hashes against the routers' keys
 * @param layouts the models' cache-group layouts, learned from their stores
 */
public record Shared(
    IngesterConfig config,
    ZContext zmq,
    PrefixIndex index,
    IngesterMetrics metrics,
    FaultHook faults,
    InstantSource clock,
    LongSupplier ticker,
    MemoryBudget memory,
    KeyChecks keyChecks,
    CacheLayouts layouts) {

  /** The parts, with the layouts recorded in {@code index}. */
  public Shared(
      IngesterConfig config,
      ZContext zmq,
      PrefixIndex index,
      IngesterMetrics metrics,
      FaultHook faults,
      InstantSource clock,
      LongSupplier ticker,
      MemoryBudget memory,
      KeyChecks keyChecks) {
    this(
        config,
        zmq,
        index,
        metrics,
        faults,
        clock,
        ticker,
        memory,
        keyChecks,
        new CacheLayouts(index, metrics.registry()));
  }

  /** The parts, with a memory budget made from the config's bounds. */
  public Shared(
      IngesterConfig config,
      ZContext zmq,
      PrefixIndex index,
      IngesterMetrics metrics,
      FaultHook faults,
      InstantSource clock,
      LongSupplier ticker,
      KeyChecks keyChecks) {
    this(config, zmq, index, metrics, faults, clock, ticker, budget(config), keyChecks);
  }

  /** The memory budget {@code config}'s bounds describe. */
  public static MemoryBudget budget(IngesterConfig config) {
    MemoryBounds bounds = config.memoryBounds();
    return MemoryBudget.of(bounds.budgetBytes(), bounds.concurrentReplays(), bounds.replayBytes());
  }

  /** Now on the monotonic ticker. */
  public long nanos() {
    return ticker.getAsLong();
  }
}
