package io.kvindex.ingester;

import io.kvindex.event.KvEventBatch;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * What the ingester needs from the shared index: ordered, fenced writes per stream, leases and
 * liveness. Implementations are thread-safe.
 *
 * <p>Temporary Redis errors are retried inside and end as a {@code SWALLOWED} outcome; real errors
 * throw.
 */
interface IndexPort extends AutoCloseable {

  /** What happened to one batch. */
  enum Applied {
    APPLIED,
    DUPLICATE,
    GAP,
    FENCED,
    SWALLOWED
  }

  /** What happened to one purge. */
  enum Purged {
    DONE,
    FENCED,
    SWALLOWED
  }

  /**
   * Applies batch {@code seq} if it is the stream's next (any sequence is next when the stream has
   * no watermark), checking the fencing token. An AllBlocksCleared in the batch purges the stream
   * inside the same atomic call, before the events that follow it.
   */
  Applied apply(StreamId stream, long seq, long token, KvEventBatch batch);

  /**
   * Makes all of a stream's entries invisible at once. With {@code resetWatermark} the stream
   * forgets its watermark, so the next batch's sequence, whatever it is, starts it afresh.
   */
  Purged purge(StreamId stream, long token, boolean resetWatermark);

  /** The last applied sequence of a stream, {@code -1} if none. */
  long watermark(StreamId stream) throws UnavailableException;

  /** A fencing token if the lease was free or ours; empty if taken or Redis was unavailable. */
  OptionalLong acquireLease(StreamId stream, String owner, Duration ttl);

  /** True if the lease is still ours under this token and was extended (false: lost or unknown). */
  boolean renewLease(StreamId stream, String owner, long token, Duration ttl);

  /** Gives the lease up at once if it is still ours. */
  void releaseLease(StreamId stream, String owner, long token);

  /** Refreshes a pod's liveness so that readers keep trusting its entries for {@code ttl}. */
  boolean heartbeat(String model, String pod, Duration ttl);

  /** Registers this replica as alive for {@code ttl}; returns how many replicas are alive. */
  int registerReplica(String replica, Duration ttl) throws UnavailableException;

  /** Removes this replica from the live set at once. */
  void deregisterReplica(String replica) throws UnavailableException;

  /**
   * Records a pod's engine incarnation (its process start time) and returns the one recorded
   * before, or {@code null} if none; kept for {@code ttl}.
   */
  String swapIncarnation(String model, String pod, String incarnation, Duration ttl)
      throws UnavailableException;

  /** Runs up to {@code maxSteps} bounded cleanup steps; true when nothing is left to collect. */
  boolean collectGarbage(int maxSteps) throws UnavailableException;

  @Override
  void close();

  /** A call whose temporary errors outlasted the retry budget (swallowed, already counted). */
  final class UnavailableException extends Exception {
    UnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
