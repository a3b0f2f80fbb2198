package io.kvindex.index;

/** What became of {@link PrefixIndex#requestResyncAsync}. Immutable and thread-safe. */
public enum ResyncStatus {
  /** This call's request stands: the pod's owner will take it. */
  REQUESTED,
  /** A request already stood within its interval (this process's or another's): nothing changed. */
  STANDING,
  /** Redis stayed unavailable within the retry budget: nothing was recorded. */
  UNAVAILABLE
}
