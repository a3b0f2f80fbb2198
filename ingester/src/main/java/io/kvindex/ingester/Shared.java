package io.kvindex.ingester;

import io.kvindex.index.PrefixIndex;
import io.kvindex.ingester.keycheck.KeyChecks;
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
 * @param gate the pause gate (tests freeze a replica with it)
 * @param clock wall time, for the lag metric
 * @param ticker monotonic nanoseconds, for every timeout and backoff ({@link System#nanoTime})
 * @param keyChecks the check of the engines' hashes against the routers' keys
 */
public record Shared(
    IngesterConfig config,
    ZContext zmq,
    PrefixIndex index,
    IngesterMetrics metrics,
    Gate gate,
    InstantSource clock,
    LongSupplier ticker,
    KeyChecks keyChecks) {

  /** Now on the monotonic ticker. */
  public long nanos() {
    return ticker.getAsLong();
  }
}
