package io.kvindex.ingester.stream;

/**
 * What an {@link EvictionModel} knows of one block, as the index stands: a block it knows is in
 * exactly one of these states; one it does not know (older than the ring, or forgotten) is in none.
 * {@link ModelBlocks#set} is where a block moves between them.
 */
enum BlockState {
  /** Held, and the index lists it. */
  LISTED,
  /**
   * Held, and to be stored with the next apply call: a touch showed the engine holds it, and its
   * parent is listed or pending before it.
   */
  PENDING,
  /**
   * Held, but its parent is not listed: stored now, it would have no place in the index's chain
   * (and lookups of the whole group would fall back to block fields while it is there).
   */
  WAITING,
  /**
   * Evicted by the model, and the index still lists it until a call carrying its removal applies.
   */
  REMOVING,
  /** Not listed: the model removed it (or dropped it unstored); a touch may list it again. */
  REMOVED_BY_MODEL,
  /** Not listed: the engine published its removal. */
  REMOVED_BY_ENGINE;

  /** Whether the engine holds the block, as far as the model knows. */
  boolean held() {
    return this == LISTED || this == PENDING || this == WAITING;
  }

  /** Whether the index lists the block, or will once the pending stores are applied. */
  boolean listedOrPending() {
    return this == LISTED || this == PENDING;
  }

  /** Whether the index does not list the block and no change of the model's would list it. */
  boolean removed() {
    return this == REMOVED_BY_MODEL || this == REMOVED_BY_ENGINE;
  }
}
