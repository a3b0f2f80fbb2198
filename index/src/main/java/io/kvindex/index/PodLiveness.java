package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * A pod's liveness as its pod record states it: the record routers read with the pod's blocks,
 * whose deadline an ingester keeps moving while the pod is up. Lookups count a pod's blocks only
 * while its record is live. Immutable and thread-safe.
 *
 * @param pod the pod
 * @param deadlineMs the record's liveness deadline (ms since the epoch, the index's clock), or null
 *     when the index holds no record for the pod (never discovered, or swept after it left)
 * @param nowMs the index's clock when the record was read
 */
public record PodLiveness(String pod, Long deadlineMs, long nowMs) {

  public PodLiveness {
    Check.notNull(pod, "pod");
  }

  /** Whether the index holds a record for the pod. */
  public boolean recorded() {
    return deadlineMs != null;
  }

  /** Whether the record's deadline has not passed: only then do lookups count the pod's blocks. */
  public boolean live() {
    return deadlineMs != null && deadlineMs >= nowMs;
  }
}
