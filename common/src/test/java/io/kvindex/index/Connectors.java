package io.kvindex.index;

import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisTopology;
import io.lettuce.core.RedisURI;
import java.util.stream.Collectors;

/** Opens a {@link RedisConnector} on a test topology. */
final class Connectors {
  private Connectors() {}

  static RedisConnector connect(RedisTopology topology) {
    String hosts =
        topology.uris().stream()
            .map(RedisURI::toString)
            .map(u -> u.substring(u.indexOf("://") + 3))
            .collect(Collectors.joining(","));
    return RedisConnector.connect((topology.isCluster() ? "redis-cluster://" : "redis://") + hosts);
  }
}
