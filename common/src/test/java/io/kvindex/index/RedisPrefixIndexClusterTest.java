package io.kvindex.index;

import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

/** The contract against a Redis Cluster (3 primaries, 1 replica each): every script one slot. */
@UsesRedisCluster
class RedisPrefixIndexClusterTest extends PrefixIndexContract {
  private static RedisConnector connector;

  @BeforeEach
  void connect(RedisCluster redis) {
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
    return PrefixIndex.builder().redis(connector).lookupPolicy(RetryPolicy.defaults());
  }
}
