package io.kvindex.simulator;

import io.kvindex.common.KvIndexException;

/**
 * The pod cannot serve requests right now (it is asleep or closed); wake it up or pick another pod.
 * Thread-safe (immutable).
 */
public final class PodUnavailableException extends KvIndexException {
  private static final long serialVersionUID = 1L;

  public PodUnavailableException(String message) {
    super(message);
  }
}
