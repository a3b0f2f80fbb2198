/**
 * One simulated engine core: a GPU block pool with prefix caching and LRU eviction, an optional CPU
 * offload tier, vLLM's chained block hashes, sleep, reset and restart, and the KV events each step
 * produces.
 */
package io.kvindex.simulator.engine;
