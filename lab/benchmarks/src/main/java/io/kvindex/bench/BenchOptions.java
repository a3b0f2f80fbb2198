package io.kvindex.bench;

import io.kvindex.redis.RedisConnector;
import java.util.Optional;

/**
 * What a benchmark run is asked for. Immutable and thread-safe.
 *
 * @param quick smaller sizes, so the run finishes in under a minute (a smoke check, not a result)
 * @param redisUri a user's own standalone Redis ({@code redis://host:port}); empty starts a local
 *     redis-server. A user's server is never flushed: the benchmark writes under fresh index names
 *     and deletes only those keys afterwards.
 */
public record BenchOptions(boolean quick, Optional<String> redisUri) {

  public BenchOptions {
    if (redisUri == null) {
      throw new IllegalArgumentException("redisUri must not be null (use Optional.empty())");
    }
    redisUri.ifPresent(
        uri -> {
          if (uri.isBlank()) {
            throw new IllegalArgumentException("redisUri must not be blank");
          }
        });
  }

  /** The options, the user's Redis URI with its password masked. */
  @Override
  public String toString() {
    return "BenchOptions[quick="
        + quick
        + ", redisUri="
        + redisUri.map(RedisConnector::masked).orElse("local")
        + "]";
  }

  /** Local redis-server, full or quick sizes. */
  public static BenchOptions local(boolean quick) {
    return new BenchOptions(quick, Optional.empty());
  }
}
