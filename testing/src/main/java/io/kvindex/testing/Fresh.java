package io.kvindex.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Asks {@link RedisExtension} for a private server or cluster instead of the shared one: started
 * for this test (or class, on a {@code @BeforeAll} parameter) and ended after it. Use it for tests
 * that inject faults or change settings. The parameter in {@code @BeforeEach} and in the test
 * itself receives the same instance. Tests with a fresh parameter are skipped when the run uses
 * external servers.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Fresh {
  /**
   * redis.conf directives for every server, each {@code "name value"}, like {@code "maxmemory
   * 10mb"}.
   */
  String[] settings() default {};

  /** Replicas per primary of a fresh cluster (3 primaries). */
  int replicasPerPrimary() default 1;

  /** {@code cluster-node-timeout} of a fresh cluster, in milliseconds. */
  long nodeTimeoutMillis() default 2000;
}
