/**
 * End-to-end benchmarks of kvindex against real Redis: {@link io.kvindex.bench.Benchmarks} is the
 * entry point. Each benchmark writes one JSON object that states its sizes and setup.
 */
package io.kvindex.bench;
