package io.kvindex.simulator;

/**
 * The pod cannot serve requests right now (it is asleep or closed); wake it up or pick another pod.
 * Thread-safe (immutable).
 */
public final class PodUnavailableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  PodUnavailableException(String message) {
    super(message);
  }
}
