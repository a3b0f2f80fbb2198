/**
 * A faithful simulator of a vLLM fleet's KV-event side, for tests, demos and benchmarks.
 *
 * <p>{@link io.kvindex.simulator.SimulatedPod} is one vLLM pod: per data-parallel rank a block pool
 * with prefix caching and LRU eviction (and an optional CPU offload tier), publishing one {@code
 * KVEventBatch} per engine step on a real ZeroMQ PUB socket ({@code [topic, seq8, payload]},
 * encoded per {@link io.kvindex.wire.WireEra}), a replay ROUTER, vLLM's dev HTTP endpoints and
 * {@code vllm:engine_sleep_state}, fault knobs, and the ground truth of what it caches. {@link
 * io.kvindex.simulator.SimulatedFleet} groups pods behind a {@link io.kvindex.simulator.PodRouter};
 * {@link io.kvindex.simulator.LoadRunner} drives a fleet with a {@link
 * io.kvindex.simulator.Workload} (a Mooncake-format trace or the synthetic multi-tenant generator).
 * {@link io.kvindex.simulator.SimCommand} is {@code kvindex sim}.
 */
package io.kvindex.simulator;
