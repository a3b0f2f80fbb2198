package io.kvindex.testing;

import io.kvindex.localredis.LocalRedisSentinel;

/** A {@link RedisSentinel} of local processes; closing it ends them. Thread-safe. */
final class SentinelHandle implements RedisSentinel, AutoCloseable {
  private final LocalRedisSentinel local;

  SentinelHandle(LocalRedisSentinel local) {
    this.local = local;
  }

  @Override
  public String uri() {
    return local.uri().toString();
  }

  @Override
  public LocalRedisSentinel sentinel() {
    return local;
  }

  @Override
  public void close() {
    local.close();
  }

  @Override
  public String toString() {
    return local.toString();
  }
}
