package io.kvindex.index;

import java.time.Duration;
import java.util.Optional;

/**
 * Who owns which stream: leases, the live ingester replicas that share the streams, and the engine
 * incarnation each stream's entries came from, which a new owner compares with the engine's.
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface Leases {

  /**
   * Takes the stream's lease if it is free or already {@code owner}'s (then its expiry is moved to
   * now + ttl and the same lease returned).
   *
   * @param owner a name unique to this process incarnation (a restarted process must not reuse it)
   * @return the lease, or empty if another owner holds it or Redis was unavailable
   */
  Optional<Lease> acquireLease(StreamId stream, String owner, Duration ttl);

  /**
   * Moves the lease's expiry to now + ttl if it is still held as {@code lease}.
   *
   * @return false if the lease is lost (or Redis was unavailable: treat it as lost)
   */
  boolean renewLease(StreamId stream, Lease lease, Duration ttl);

  /**
   * Gives the lease up if it is still held as {@code lease}; true if it did. A lease given up is
   * counted in {@link #leaseReleases()}.
   */
  boolean releaseLease(StreamId stream, Lease lease);

  /**
   * How many leases the index's replicas have given up (a replica shedding streams over its fair
   * share, or stopping): one read. A replica short of its share watches it to take a stream given
   * up at once, rather than at its next coordination round.
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  long leaseReleases();

  /**
   * Registers an ingester replica as alive until now + ttl and tells how many replicas are alive
   * (itself included), so that replicas can share the streams fairly. A replica name belongs to the
   * index instance that registered it while its entry lives.
   *
   * @throws ReplicaConflictException if another live process (another index instance) holds the
   *     name: leases name their owner, so two processes under one name would pass each other's
   *     fencing
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  int registerReplica(String replica, Duration ttl);

  /**
   * Removes a replica from the live set at once (a graceful stop).
   *
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  void deregisterReplica(String replica);

  /**
   * The engine incarnation (its process start time, as its {@code /metrics} reports it) the
   * stream's entries came from, as its owners last recorded it ({@link #recordIncarnation}): a new
   * owner compares it with what the engine reports now, since a changed incarnation means the
   * engine restarted and lost its cache even when its sequence numbers do not show it.
   *
   * @return the incarnation recorded, or empty if none
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  Optional<String> incarnation(StreamId stream);

  /**
   * Records the stream's engine incarnation for {@code ttl}, if the record holds {@code expected}
   * (null: none) or already holds {@code incarnation}: a compare-and-set, so that a retry after a
   * lost reply answers as the first attempt did, and a record another owner changed meanwhile is
   * never replaced unseen. Each stream has its own record, so a pod's ranks never move each
   * other's.
   *
   * @return true if the record holds {@code incarnation} now, false if it held another one
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  boolean recordIncarnation(StreamId stream, String expected, String incarnation, Duration ttl);
}
