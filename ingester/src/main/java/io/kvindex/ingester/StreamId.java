package io.kvindex.ingester;

import java.util.Objects;

/**
 * One event stream: a data-parallel rank of a pod serving a model. Immutable and thread-safe.
 *
 * @param model the served model name
 * @param pod the pod name
 * @param dpRank the data-parallel rank (each rank publishes its own sequence)
 * @param keyMode how the index keys the blocks ({@code engine} or {@code token})
 */
record StreamId(String model, String pod, int dpRank, String keyMode)
    implements Comparable<StreamId> {

  StreamId {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(pod, "pod");
    Objects.requireNonNull(keyMode, "keyMode");
    if (dpRank < 0) {
      throw new IllegalArgumentException("dpRank must be >= 0, got " + dpRank);
    }
  }

  @Override
  public int compareTo(StreamId o) {
    int c = pod.compareTo(o.pod);
    if (c == 0) {
      c = Integer.compare(dpRank, o.dpRank);
    }
    return c == 0 ? model.compareTo(o.model) : c;
  }

  @Override
  public String toString() {
    return pod + "/dp" + dpRank;
  }
}
