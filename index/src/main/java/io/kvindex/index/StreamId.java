package io.kvindex.index;

import io.kvindex.common.Check;

/**
 * One engine core's event stream: the unit that holds a cache. Immutable and thread-safe.
 *
 * @param model the served model name, as the router will ask for it
 * @param pod the pod's name (any string, up to {@value #MAX_NAME_BYTES} UTF-8 bytes)
 * @param dpRank the data-parallel rank, 0 to 65535 (0 when the engine has none)
 */
public record StreamId(String model, String pod, int dpRank) {
  /** The longest model or pod name accepted, in UTF-8 bytes. */
  public static final int MAX_NAME_BYTES = Check.MAX_NAME_BYTES;

  public StreamId {
    Check.name(model, "model");
    Check.name(pod, "pod");
    Check.between(dpRank, 0, 0xFFFF, "dpRank");
  }

  @Override
  public String toString() {
    return pod + "/dp" + dpRank;
  }

  /** Rank 0 of a pod. */
  public static StreamId of(String model, String pod) {
    return new StreamId(model, pod, 0);
  }
}
