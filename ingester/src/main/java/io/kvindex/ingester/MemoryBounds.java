package io.kvindex.ingester;

/**
 * What the ingester may hold in memory, whatever its pods send: one budget for the whole process,
 * and what one stream may take of it. At a bound a stream drops, waits, replays in windows or
 * purges (each counted), never the process its heap. Immutable, thread-safe.
 *
 * @param budgetBytes the process's budget: decoded batches waiting or replayed, and the bytes its
 *     sockets received and it has not read yet
 * @param concurrentReplays replays read at a time, each in a window of the budget's replay half
 * @param pendingBytes bytes of live batches one stream holds waiting, at most
 * @param replayBytes bytes one replay window holds at most (a longer replay is read in windows)
 * @param messageBytes the largest ZeroMQ message accepted from a pod
 */
public record MemoryBounds(
    long budgetBytes,
    int concurrentReplays,
    long pendingBytes,
    long replayBytes,
    long messageBytes) {}
