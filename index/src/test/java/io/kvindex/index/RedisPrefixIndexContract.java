package io.kvindex.index;

import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisTopology;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * The contract against a real Redis; the subclass's annotation picks the topology ({@code
 * UsesRedis} or {@code UsesRedisCluster}), and the extension resolves {@link RedisTopology} to it.
 * One connector per test class.
 */
abstract class RedisPrefixIndexContract extends PrefixIndexContract {
  private static RedisConnector connector;

  @BeforeEach
  void connect(RedisTopology redis) {
    if (connector == null) {
      connector = Connectors.connect(redis);
    }
  }

  @AfterAll
  static void disconnect() {
    if (connector != null) {
      connector.close();
      connector = null;
    }
  }

  @Override
  PrefixIndexBuilder builder() {
    // The smallest chunk: the random fleets' batches of up to ~36 blocks apply in several calls.
    return PrefixIndex.builder()
        .redis(connector)
        .lookupPolicy(RetryPolicy.defaults())
        .applyChunkBlocks(16);
  }
}
