/**
 * A faithful simulator of a vLLM fleet's KV-event side, for tests, demos and benchmarks.
 *
 * <p>{@link io.kvindex.simulator.SimulatedPod} is one vLLM pod and {@link
 * io.kvindex.simulator.SimulatedFleet} groups pods behind a {@link io.kvindex.simulator.PodRouter};
 * {@link io.kvindex.simulator.SimCommand} is {@code kvindex sim}. The parts, by package: {@code
 * engine} (per data-parallel rank a block pool with prefix caching and LRU eviction, an optional
 * CPU offload tier, vLLM's block hashing, sleep and restart), {@code wire} (the real ZeroMQ PUB
 * socket publishing one {@code KVEventBatch} per engine step in any {@link
 * io.kvindex.wire.WireEra}, and the replay ROUTER with its ring), {@code http} (vLLM's dev
 * endpoints, {@code /metrics} with {@code vllm:engine_sleep_state}, the ground truth; and the
 * client of kvindex's scoring service) and {@code load} (workloads from a Mooncake trace or the
 * synthetic multi-tenant generator, and the runner that drives a fleet with them).
 */
package io.kvindex.simulator;
