package io.kvindex.index;

import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisTopology;
import io.lettuce.core.RedisURI;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.util.stream.Collectors;

/** Opens a {@link RedisConnector} on a test topology. */
public final class Connectors {
  private Connectors() {}

  public static RedisConnector connect(RedisTopology topology) {
    return connect(topology, Metrics.globalRegistry);
  }

  /** As above, its meters (and those of indexes built on it) in {@code registry}. */
  public static RedisConnector connect(RedisTopology topology, MeterRegistry registry) {
    String hosts =
        topology.uris().stream()
            .map(RedisURI::toString)
            .map(u -> u.substring(u.indexOf("://") + 3))
            .collect(Collectors.joining(","));
    return RedisConnector.builder()
        .uri((topology.isCluster() ? "redis-cluster://" : "redis://") + hosts)
        .meterRegistry(registry)
        .build();
  }
}
