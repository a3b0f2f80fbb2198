package io.kvindex.index;

/**
 * One engine core's event stream: the unit that holds a cache. Immutable and thread-safe.
 *
 * @param model the served model name, as the router will ask for it
 * @param pod the pod's name (any string, up to {@value #MAX_NAME_BYTES} UTF-8 bytes)
 * @param dpRank the data-parallel rank, 0 to 65535 (0 when the engine has none)
 */
public record StreamId(String model, String pod, int dpRank) {
  /** The longest model or pod name accepted, in UTF-8 bytes. */
  public static final int MAX_NAME_BYTES = 1 << 16;

  public StreamId {
    Names.check(model, "model");
    Names.check(pod, "pod");
    if (dpRank < 0 || dpRank > 0xFFFF) {
      throw new IllegalArgumentException("dpRank must be in [0, 65535], got " + dpRank);
    }
  }

  /** Rank 0 of a pod. */
  public static StreamId of(String model, String pod) {
    return new StreamId(model, pod, 0);
  }
}
