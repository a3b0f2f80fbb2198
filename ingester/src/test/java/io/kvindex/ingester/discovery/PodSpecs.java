package io.kvindex.ingester.discovery;

import java.util.List;

/** Pod specs changed in one field, for tests. Stateless. */
public final class PodSpecs {
  private PodSpecs() {}

  /** {@code spec} with other data-parallel ranks. */
  public static PodSpec withDpRanks(PodSpec spec, List<Integer> ranks) {
    return new PodSpec(
        spec.name(),
        spec.model(),
        spec.publisherEndpoint(),
        spec.bind(),
        spec.replayEndpoint(),
        spec.metricsUrl(),
        ranks,
        spec.keyMode(),
        spec.topic(),
        spec.incarnation());
  }

  /** {@code spec} with another incarnation. */
  public static PodSpec withIncarnation(PodSpec spec, String incarnation) {
    return new PodSpec(
        spec.name(),
        spec.model(),
        spec.publisherEndpoint(),
        spec.bind(),
        spec.replayEndpoint(),
        spec.metricsUrl(),
        spec.dpRanks(),
        spec.keyMode(),
        spec.topic(),
        incarnation);
  }
}
