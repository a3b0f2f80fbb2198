package io.kvindex.testing;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;
import org.junit.platform.commons.support.HierarchyTraversalMode;

/**
 * Gives tests real Redis servers as parameters of type {@link RedisStandalone}, {@link
 * RedisCluster} or {@link RedisSentinel} (in test, {@code @BeforeEach} or {@code @BeforeAll}
 * methods).
 *
 * <pre>{@code
 * @UsesRedis
 * class IndexTest {
 *   @Test
 *   void apply_storesBlocks(RedisStandalone redis) {
 *     RedisClient client = RedisClient.create(redis.uri());
 *   }
 * }
 * }</pre>
 *
 * <p>Servers come from, in order: {@code KVINDEX_TEST_REDIS_URI} / {@code
 * KVINDEX_TEST_REDIS_CLUSTER} (comma-separated seeds; fault handles then unavailable), local
 * redis-server processes (redis-server on the PATH, else the embedded 7.0.15 binary), then
 * Testcontainers {@code redis:7.0} for standalone when a Docker engine answers. With none, tests
 * are skipped, or fail when {@code CI=true} or {@code KVINDEX_TEST_REDIS_REQUIRED=true}.
 *
 * <p>A {@link RedisTopology} parameter is a cluster in a test tagged {@code cluster} and a
 * standalone server otherwise, so one abstract test class can run against both through two
 * subclasses, one with {@link UsesRedis} and one with {@link UsesRedisCluster}.
 *
 * <p>One standalone server and one cluster (3 primaries, 1 replica each, {@code
 * cluster-node-timeout} 5 s) are shared by the whole test run; each test that receives one gets it
 * flushed ({@code FLUSHALL}) once, before its first use. A parameter marked {@link Fresh} gets a
 * private instance, ended after the test. A {@link RedisCluster} parameter needs the {@code
 * cluster} tag: use {@link UsesRedisCluster}. A {@link RedisSentinel} parameter is always private
 * to its test: a primary, a replica and a Sentinel, only ever of local processes.
 *
 * <p>Thread-safe: shared instances are created once through the root store.
 */
public final class RedisExtension implements ParameterResolver, ExecutionCondition {
  /** The tag of tests that need a Redis Cluster. */
  public static final String CLUSTER_TAG = "cluster";

  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(RedisExtension.class);

  /** Created by JUnit. */
  public RedisExtension() {}

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    Class<?> type = parameter.getParameter().getType();
    return type == RedisStandalone.class
        || type == RedisCluster.class
        || type == RedisTopology.class
        || type == RedisSentinel.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    if (parameter.getParameter().getType() == RedisSentinel.class) {
      try {
        return context
            .getStore(NAMESPACE)
            .getOrComputeIfAbsent(
                "sentinel-" + context.getUniqueId(), k -> Servers.sentinel(), SentinelHandle.class);
      } catch (RuntimeException e) {
        throw new ParameterResolutionException(
            "cannot provide a Redis Sentinel set: " + e.getMessage(), e);
      }
    }
    boolean cluster = wantsCluster(parameter.getParameter().getType(), context);
    if (cluster && !context.getTags().contains(CLUSTER_TAG)) {
      throw new ParameterResolutionException(
          "a RedisCluster parameter needs the \"cluster\" tag: annotate "
              + context.getDisplayName()
              + " or its class with @UsesRedisCluster");
    }
    if (Servers.source(cluster) == Servers.Source.NONE) {
      throw new ParameterResolutionException(Servers.missing(cluster));
    }
    Optional<Fresh> fresh = parameter.findAnnotation(Fresh.class);
    if (fresh.isPresent() && Servers.source(cluster) == Servers.Source.EXTERNAL) {
      throw new ParameterResolutionException(
          "@Fresh needs servers this run starts, but the environment names external ones");
    }
    try {
      return fresh.isPresent() ? fresh(cluster, fresh.get(), context) : shared(cluster, context);
    } catch (RuntimeException e) {
      throw new ParameterResolutionException(
          "cannot provide a Redis " + (cluster ? "Cluster" : "server") + ": " + e.getMessage(), e);
    }
  }

  /** A {@link RedisTopology} parameter means a cluster in a test tagged cluster. */
  private static boolean wantsCluster(Class<?> type, ExtensionContext context) {
    return type == RedisCluster.class
        || (type == RedisTopology.class && context.getTags().contains(CLUSTER_TAG));
  }

  private static RedisTopology shared(boolean cluster, ExtensionContext context) {
    ExtensionContext.Store root = context.getRoot().getStore(NAMESPACE);
    RedisTopology topology =
        cluster
            ? root.getOrComputeIfAbsent(
                "shared-cluster", k -> Servers.cluster(null), ClusterHandle.class)
            : root.getOrComputeIfAbsent(
                "shared-standalone", k -> Servers.standalone(null), StandaloneHandle.class);
    String flushed = "flushed-" + cluster + "-" + context.getUniqueId();
    context
        .getStore(NAMESPACE)
        .getOrComputeIfAbsent(
            flushed,
            k -> {
              topology.flushAll();
              return Boolean.TRUE;
            },
            Boolean.class);
    return topology;
  }

  private static RedisTopology fresh(boolean cluster, Fresh fresh, ExtensionContext context) {
    String key = "fresh-" + cluster + "-" + context.getUniqueId() + "-" + fresh;
    ExtensionContext.Store store = context.getStore(NAMESPACE);
    return cluster
        ? store.getOrComputeIfAbsent(key, k -> Servers.cluster(fresh), ClusterHandle.class)
        : store.getOrComputeIfAbsent(key, k -> Servers.standalone(fresh), StandaloneHandle.class);
  }

  /** Skips a test whose parameters cannot be served here (see the class comment). */
  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    if (context.getTestMethod().isEmpty()) {
      return ConditionEvaluationResult.enabled("not a test method");
    }
    for (Parameter parameter : parameters(context)) {
      Class<?> type = parameter.getType();
      if (type == RedisSentinel.class && Servers.source(false) != Servers.Source.LOCAL) {
        if (Servers.source(false) == Servers.Source.NONE && Servers.required()) {
          continue; // resolving the parameter fails, saying why
        }
        return ConditionEvaluationResult.disabled(
            "a RedisSentinel needs local redis-server processes, but the servers here are "
                + Servers.source(false));
      }
      if (type != RedisStandalone.class
          && type != RedisCluster.class
          && type != RedisTopology.class) {
        continue;
      }
      boolean cluster = wantsCluster(type, context);
      Servers.Source source = Servers.source(cluster);
      if (source == Servers.Source.NONE && !Servers.required()) {
        return ConditionEvaluationResult.disabled(Servers.missing(cluster));
      }
      if (source == Servers.Source.EXTERNAL && parameter.isAnnotationPresent(Fresh.class)) {
        return ConditionEvaluationResult.disabled(
            "@Fresh needs servers this run starts, but "
                + (cluster ? Servers.CLUSTER_ENV : Servers.STANDALONE_ENV)
                + " names external ones");
      }
    }
    return ConditionEvaluationResult.enabled("Redis available");
  }

  /** The parameters of the test method and of its class's before-each and before-all methods. */
  private static List<Parameter> parameters(ExtensionContext context) {
    List<Parameter> parameters = new ArrayList<>();
    parameters.addAll(List.of(context.getRequiredTestMethod().getParameters()));
    Class<?> testClass = context.getRequiredTestClass();
    for (Class<? extends Annotation> lifecycle : List.of(BeforeEach.class, BeforeAll.class)) {
      for (Method method :
          AnnotationSupport.findAnnotatedMethods(
              testClass, lifecycle, HierarchyTraversalMode.TOP_DOWN)) {
        parameters.addAll(List.of(method.getParameters()));
      }
    }
    return parameters;
  }
}
