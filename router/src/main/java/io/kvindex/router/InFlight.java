package io.kvindex.router;

/**
 * A routed request counted in this router's share of the fleet's load view ({@link
 * KvRouter#started}) until it ends. Thread-safe; each method acts once, later calls do nothing.
 */
public interface InFlight {
  /**
   * The request's first token came back: its prompt no longer waits on the pod, so its prompt
   * tokens leave the view (the request still counts until {@link #finished}).
   */
  void firstToken();

  /** The request ended, failed or was refused: it leaves the view (its tokens too, if still in). */
  void finished();

  /** Nothing counted: what {@link KvRouter#started} returns without a shared load view. */
  InFlight NONE =
      new InFlight() {
        @Override
        public void firstToken() {}

        @Override
        public void finished() {}
      };
}
