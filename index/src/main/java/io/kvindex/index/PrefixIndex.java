package io.kvindex.index;

/**
 * The shared index of which pod holds which KV-cache blocks: written per stream by the ingester
 * (ordered, fenced, atomic batches), read per prompt by routers (one round trip per index group).
 *
 * <p>Semantics every implementation shares:
 *
 * <ul>
 *   <li>A stream's batches apply in sequence order: the first batch (or the first after a purge
 *       that reset the watermark) may have any sequence number; then only watermark + 1 applies.
 *   <li>Writes need the stream's current {@link Lease} (see {@link Leases#acquireLease}); the index
 *       compares its token and its owner.
 *   <li>The index has an epoch, created with it and again whenever Redis lost it (a restart without
 *       persistence, a FLUSHALL): a write of a process that last saw another epoch is refused as
 *       {@code RESET}, and {@link Maintenance#addResetListener listeners} hear of it, as they do
 *       when Redis changed the node history it serves (a failover): either way what the index holds
 *       may be older than what its writers and readers remember.
 *   <li>A purge, and an {@code AllBlocksCleared} event, make all the stream's entries invisible at
 *       once; later events of the same batch start from an empty cache.
 *   <li>A pod is live until its livenessAsync deadline (refreshed by every applied batch and by
 *       {@link StreamWrites#heartbeat}); entries of pods that are not live are invisible.
 *   <li>Temporary Redis errors are retried, then reported as SWALLOWED / incomplete (or, where a
 *       call cannot go on without the answer, as {@link
 *       io.kvindex.redis.RedisUnavailableException}); real errors throw {@link
 *       io.kvindex.redis.RedisRealException} (or a subclass).
 *   <li>A model's blocks are keyed in one {@link KeyMode} fleet-wide: writers pass it with every
 *       batch, readers with every lookup.
 * </ul>
 *
 * <p>The index serves its users by role, and each user holds the narrowest it needs: {@link
 * StreamWrites} and {@link Leases} (the ingester's writes and stream ownership), {@link Lookups}
 * (the router's reads and speculative routes), {@link ClosedLoopStore} (what routers and ingesters
 * tell each other about drift, inferred evictions and lag), {@link ModelNotes} (the models'
 * layouts, keys and key checks) and {@link Maintenance} (garbage collection, departed pods,
 * resets). A {@code PrefixIndex} is all of them, for the process that opens the index and closes
 * it. In every role a method that returns a {@link java.util.concurrent.CompletableFuture} is named
 * {@code ...Async} and never blocks; one without the suffix blocks.
 *
 * <p>Implementations are thread-safe.
 */
public interface PrefixIndex
    extends StreamWrites, Leases, Lookups, ModelNotes, ClosedLoopStore, Maintenance, AutoCloseable {

  /** A builder for a Redis-backed index. */
  static PrefixIndexBuilder builder() {
    return new PrefixIndexBuilder();
  }

  /** Releases what the index owns (not a connection it was given). */
  @Override
  void close();
}
