/**
 * The simulator's HTTP: each pod's endpoint (vLLM's dev routes, {@code /metrics} with the sleep
 * state and the process start time, the ground truth at {@code /kv_blocks}) and the client that
 * routes requests through kvindex's scoring service.
 */
package io.kvindex.simulator.http;
