package io.kvindex.index;

import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

/** The contract against a standalone Redis. */
@UsesRedis
class RedisPrefixIndexStandaloneTest extends PrefixIndexContract {
  private static RedisConnector connector;

  @BeforeEach
  void connect(RedisStandalone redis) {
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
