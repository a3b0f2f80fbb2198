package io.kvindex.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class or method with {@link RedisExtension} and tags it {@code cluster}, so it can
 * receive {@link RedisCluster} and {@code -DexcludedGroups=cluster} skips it.
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Tag(RedisExtension.CLUSTER_TAG)
@ExtendWith(RedisExtension.class)
public @interface UsesRedisCluster {}
