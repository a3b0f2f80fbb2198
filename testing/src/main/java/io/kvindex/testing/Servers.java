package io.kvindex.testing;

import io.kvindex.localredis.LocalRedis;
import io.kvindex.localredis.LocalRedisCluster;
import io.kvindex.localredis.LocalRedisSentinel;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Chooses where test servers come from and starts them. Order: servers named in the environment,
 * local redis-server processes, then (standalone only) Testcontainers when Docker answers.
 * Thread-safe.
 */
final class Servers {
  /** Environment variable (or system property) with a standalone server's URI. */
  static final String STANDALONE_ENV = "KVINDEX_TEST_REDIS_URI";

  /** Environment variable (or system property) with a cluster's comma-separated seed URIs. */
  static final String CLUSTER_ENV = "KVINDEX_TEST_REDIS_CLUSTER";

  /**
   * When {@code true} (or when {@code CI=true}), a missing server fails tests instead of skipping.
   */
  static final String REQUIRED_ENV = "KVINDEX_TEST_REDIS_REQUIRED";

  /** {@code cluster-node-timeout} of the shared cluster. */
  static final Duration SHARED_CLUSTER_NODE_TIMEOUT = Duration.ofSeconds(5);

  /** Where servers come from. */
  enum Source {
    EXTERNAL,
    LOCAL,
    DOCKER,
    NONE
  }

  private Servers() {}

  static Source source(boolean cluster) {
    if (setting(cluster ? CLUSTER_ENV : STANDALONE_ENV) != null) {
      return Source.EXTERNAL;
    }
    if (LocalRedis.binaryAvailable()) {
      return Source.LOCAL;
    }
    if (!cluster && DockerRedis.available()) {
      return Source.DOCKER;
    }
    return Source.NONE;
  }

  static boolean required() {
    return "true".equalsIgnoreCase(setting("CI")) || "true".equalsIgnoreCase(setting(REQUIRED_ENV));
  }

  static String missing(boolean cluster) {
    return "no Redis "
        + (cluster ? "Cluster" : "server")
        + " for tests: set "
        + (cluster ? CLUSTER_ENV + " to seed URIs" : STANDALONE_ENV + " to a redis:// URI")
        + ", put redis-server on the PATH or set KVINDEX_REDIS_SERVER"
        + (cluster ? "" : ", or start a Docker engine");
  }

  static StandaloneHandle standalone(Fresh fresh) {
    Source source = source(false);
    switch (source) {
      case EXTERNAL:
        return new StandaloneHandle(
            setting(STANDALONE_ENV), "external server from " + STANDALONE_ENV, null, null);
      case LOCAL:
        LocalRedis.Builder builder = LocalRedis.builder();
        settings(fresh).forEach(s -> builder.setting(s[0], s[1]));
        LocalRedis local = builder.start();
        return new StandaloneHandle(
            local.uri().toString(), "local redis-server process", local, local);
      case DOCKER:
        return DockerRedis.start();
      default:
        throw new IllegalStateException(missing(false));
    }
  }

  static ClusterHandle cluster(Fresh fresh) {
    Source source = source(true);
    switch (source) {
      case EXTERNAL:
        List<String> seeds =
            Arrays.stream(setting(CLUSTER_ENV).split(","))
                .map(String::trim)
                .filter(s -> !s.isEmpty())
                .toList();
        return new ClusterHandle(seeds, "external cluster from " + CLUSTER_ENV, null);
      case LOCAL:
        // The shared cluster never fails over on purpose: a longer timeout keeps a loaded
        // machine from flagging a slow node as failed.
        LocalRedisCluster.Builder builder =
            LocalRedisCluster.builder().nodeTimeout(SHARED_CLUSTER_NODE_TIMEOUT);
        if (fresh != null) {
          builder
              .replicasPerPrimary(fresh.replicasPerPrimary())
              .nodeTimeout(Duration.ofMillis(fresh.nodeTimeoutMillis()));
        }
        settings(fresh).forEach(s -> builder.setting(s[0], s[1]));
        LocalRedisCluster local = builder.start();
        List<String> uris = local.seedUris().stream().map(Object::toString).toList();
        return new ClusterHandle(uris, "local redis-server cluster", local);
      default:
        throw new IllegalStateException(missing(true));
    }
  }

  /** A primary, a replica and a Sentinel of local processes. */
  static SentinelHandle sentinel() {
    if (source(false) != Source.LOCAL) {
      throw new IllegalStateException(missing(false) + " (a Sentinel set needs local processes)");
    }
    return new SentinelHandle(LocalRedisSentinel.start());
  }

  private static List<String[]> settings(Fresh fresh) {
    if (fresh == null) {
      return List.of();
    }
    return Arrays.stream(fresh.settings()).map(Servers::nameAndValue).toList();
  }

  private static String[] nameAndValue(String setting) {
    String trimmed = setting.trim();
    int space = trimmed.indexOf(' ');
    if (space < 0) {
      throw new IllegalArgumentException(
          "@Fresh setting '" + setting + "' must be \"name value\", like \"maxmemory 10mb\"");
    }
    return new String[] {trimmed.substring(0, space), trimmed.substring(space + 1).trim()};
  }

  private static String setting(String name) {
    String value = System.getProperty(name);
    if (value == null || value.isBlank()) {
      value = System.getenv(name);
    }
    return value == null || value.isBlank() ? null : value.trim();
  }
}
