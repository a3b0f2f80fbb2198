package io.kvindex.epp;

import java.util.List;
import java.util.Optional;

/**
 * Where the picker's endpoints come from: the ready pods of an InferencePool, or a static list.
 * Implementations are thread-safe and answer {@link #endpoints()} from memory.
 */
public interface Candidates extends AutoCloseable {

  /** The endpoints a request may go to now, in a stable order. */
  List<Endpoint> endpoints();

  /**
   * Why the list may not be current (the pool not listed and watched yet, or its watch broken), or
   * empty when it is: for readiness.
   */
  Optional<String> problem();

  /** A fixed list, for runs without Kubernetes. */
  static Candidates of(List<Endpoint> endpoints) {
    List<Endpoint> fixed = List.copyOf(endpoints);
    return new Candidates() {
      @Override
      public List<Endpoint> endpoints() {
        return fixed;
      }

      @Override
      public Optional<String> problem() {
        return Optional.empty();
      }

      @Override
      public void close() {}
    };
  }

  @Override
  void close();
}
