package io.kvindex.ingester.lease;

/**
 * Where one held stream's worker stands, from its start to its exit, as a state machine: every
 * transition is in {@link #on}. Only {@link #RUNNING} and {@link #REPLACING} count towards the
 * replica's fair share; a worker that exits {@link #STOPPING_LEASE_KEPT} leaves its lease to expire
 * (it is lost, or another process holds this replica's id and a release would free the other's).
 * Immutable; thread-safe.
 */
enum Holding {
  /** The worker owns the stream. */
  RUNNING,
  /**
   * Its pod left discovery: the stream is purged, then the worker stops and its lease is released.
   */
  RETIRING,
  /**
   * Its pod's engine is a new incarnation: the stream is restarted (purged, replayed from 0), then
   * the worker stops and its lease is released, for a fresh worker on the new spec.
   */
  REPLACING,
  /** Told to stop; its lease is released when it exits. */
  STOPPING,
  /** Told to stop, or halted; its lease is kept when it exits. */
  STOPPING_LEASE_KEPT;

  /** What the coordinator decides about a held stream. */
  enum Event {
    /** Its pod left discovery. */
    POD_LEFT,
    /** Its pod's engine is a new incarnation. */
    NEW_INCARNATION,
    /** Stop the worker and release the lease (shed, retired, replaced, spec changed). */
    STOP,
    /** Stop the worker and keep the lease (lost on renewal, or the replica id in conflict). */
    STOP_KEEPING_LEASE
  }

  /** The state after {@code event}. */
  Holding on(Event event) {
    return switch (event) {
      case POD_LEFT -> this == RUNNING || this == REPLACING ? RETIRING : this;
      case NEW_INCARNATION -> this == RUNNING ? REPLACING : this;
      case STOP -> this == STOPPING_LEASE_KEPT ? this : STOPPING;
      case STOP_KEEPING_LEASE -> STOPPING_LEASE_KEPT;
    };
  }

  /** Whether the stream counts towards the replica's fair share. */
  boolean counted() {
    return this == RUNNING || this == REPLACING;
  }
}
