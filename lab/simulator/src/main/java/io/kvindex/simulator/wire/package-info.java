/**
 * What a simulated engine puts on the wire: a ZeroMQ PUB socket sending {@code [topic, seq8,
 * payload]} per engine step, encoded in a chosen vLLM era, with fault knobs (drops, duplicates,
 * delays, silence), and the replay ROUTER answering from a bounded ring.
 */
package io.kvindex.simulator.wire;
