package io.kvindex.redis;

import io.kvindex.common.Check;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The counters of the Redis access layer. Micrometer caches meters by id, so looking one up per
 * event is cheap; events are failures, which are rare. Thread-safe.
 */
final class RedisMetrics {

  static final String RETRIES = "kvindex.redis.retries";
  static final String SWALLOWED = "kvindex.redis.swallowed";
  static final String ERRORS = "kvindex.redis.errors";
  static final String RELOADS = "kvindex.redis.script.reloads";
  static final String MISSING = "kvindex.redis.script.missing";

  private final MeterRegistry registry;

  RedisMetrics(MeterRegistry registry) {
    this.registry = Check.notNull(registry, "meterRegistry");
  }

  void retry(String operation, String reason) {
    Counter.builder(RETRIES)
        .description("Redis calls retried after a temporary error")
        .tag("operation", operation)
        .tag("reason", reason)
        .register(registry)
        .increment();
  }

  void swallowed(String operation, String reason) {
    Counter.builder(SWALLOWED)
        .description("Redis calls given up after temporary errors (reason of the last)")
        .tag("operation", operation)
        .tag("reason", reason)
        .register(registry)
        .increment();
  }

  void error(String operation, String reason) {
    Counter.builder(ERRORS)
        .description("Redis calls failed with a real error")
        .tag("operation", operation)
        .tag("reason", reason)
        .register(registry)
        .increment();
  }

  void reload(String script) {
    Counter.builder(RELOADS)
        .description("Scripts sent again with EVAL after NOSCRIPT")
        .tag("script", script)
        .register(registry)
        .increment();
  }

  void missing(String script) {
    Counter.builder(MISSING)
        .description(
            "Scripts a process that does not load scripts (a router) found missing (NOSCRIPT)")
        .tag("script", script)
        .register(registry)
        .increment();
  }
}
