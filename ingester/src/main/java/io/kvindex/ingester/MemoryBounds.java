package io.kvindex.ingester;

/**
 * What one stream may hold in memory, whatever its pod sends: at a bound the stream drops, purges
 * or disconnects (each counted), never the process. Immutable, thread-safe.
 *
 * @param pendingBytes payload bytes of live batches buffered while waiting
 * @param replayBytes payload bytes one replay may return
 * @param messageBytes the largest ZeroMQ message accepted from a pod
 */
public record MemoryBounds(long pendingBytes, long replayBytes, long messageBytes) {}
