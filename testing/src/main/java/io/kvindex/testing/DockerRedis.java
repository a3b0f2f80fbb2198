package io.kvindex.testing;

import com.redis.testcontainers.RedisContainer;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.utility.DockerImageName;

/**
 * Standalone Redis in a Testcontainers container ({@value #IMAGE}), the last resort when no
 * redis-server binary can run here. Every use is guarded so that missing Testcontainers classes or
 * a missing Docker engine only make {@link #available()} false. Thread-safe.
 */
final class DockerRedis {
  static final String IMAGE = "redis:7.0";
  private static volatile Boolean available;

  private DockerRedis() {}

  /** Whether Testcontainers is on the classpath and a Docker engine answers (asked once). */
  static boolean available() {
    Boolean known = available;
    if (known == null) {
      known = probe();
      available = known;
    }
    return known;
  }

  private static boolean probe() {
    try {
      Class.forName("org.testcontainers.DockerClientFactory", false, loader());
      Class.forName("com.redis.testcontainers.RedisContainer", false, loader());
      return Engine.answers();
    } catch (ClassNotFoundException | LinkageError | RuntimeException e) {
      return false;
    }
  }

  private static ClassLoader loader() {
    return DockerRedis.class.getClassLoader();
  }

  /** Starts a container; only call after {@link #available()} returned true. */
  static StandaloneHandle start() {
    return Engine.start();
  }

  /** Holds every reference to Testcontainers, so it loads only after the classpath check. */
  private static final class Engine {
    static boolean answers() {
      return DockerClientFactory.instance().isDockerAvailable();
    }

    static StandaloneHandle start() {
      RedisContainer container = new RedisContainer(DockerImageName.parse(IMAGE));
      container.start();
      String uri = "redis://" + container.getRedisHost() + ":" + container.getRedisPort();
      return new StandaloneHandle(uri, "Testcontainers " + IMAGE, null, container::stop);
    }
  }
}
