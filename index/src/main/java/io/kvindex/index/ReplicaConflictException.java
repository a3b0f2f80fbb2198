package io.kvindex.index;

import io.kvindex.common.KvIndexException;

/**
 * Another live process registered the same ingester replica name: leases name their owner, so two
 * processes under one name would both pass each other's fencing. Retrying cannot fix it while the
 * other one lives; the message says what to change. Immutable, thread-safe.
 */
public final class ReplicaConflictException extends KvIndexException {
  /** A conflict described by {@code message}, which says what to do. */
  public ReplicaConflictException(String message) {
    super(message);
  }
}
