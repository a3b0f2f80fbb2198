/**
 * One stream's life: the pure {@link io.kvindex.ingester.stream.Sequencer} (ordering, duplicates,
 * gaps, restarts, replay decisions, purges to run) and the {@link
 * io.kvindex.ingester.stream.StreamWorker} shell around it that owns the SUB socket, the replay
 * fetches, the Redis calls and the metrics; other threads see and steer a stream through its {@link
 * io.kvindex.ingester.stream.StreamStatus}.
 */
package io.kvindex.ingester.stream;
