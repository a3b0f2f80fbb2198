package io.kvindex.ingester;

import java.time.InstantSource;
import org.zeromq.ZContext;

/**
 * What every stream worker of one ingester shares. Immutable holder of thread-safe parts.
 *
 * @param config the settings
 * @param zmq the ZeroMQ context (sockets made from it stay on their creating thread)
 * @param index the index port
 * @param decoder the payload decoder
 * @param metrics the meters
 * @param gate the pause gate (tests freeze a replica with it)
 * @param clock wall time, for the lag metric
 */
record Shared(
    IngesterConfig config,
    ZContext zmq,
    IndexPort index,
    BatchDecoder decoder,
    IngesterMetrics metrics,
    Gate gate,
    InstantSource clock) {}
