package io.kvindex.localredis;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Finds the redis-server binary: {@value #ENV} first, then {@code redis-server} on the {@code
 * PATH}, else the Redis 7.0.15 binary shipped inside {@code org.signal:embedded-redis}, extracted
 * once per JVM. Thread-safe.
 */
final class RedisBinary {
  /** Environment variable naming a redis-server binary to use instead of any other. */
  static final String ENV = "KVINDEX_REDIS_SERVER";

  private static final String EMBEDDED_VERSION = "7.0.15";
  private static Path extracted;

  private RedisBinary() {}

  /** Returns the binary to run; throws {@link LocalRedisException} saying what to do if none. */
  static Path locate() {
    String fromEnv = System.getenv(ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      Path path = Path.of(fromEnv);
      if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
        throw new LocalRedisException(
            ENV
                + "="
                + fromEnv
                + " is not an executable file; point it at a redis-server binary"
                + " or unset it to use the embedded Redis "
                + EMBEDDED_VERSION);
      }
      return path;
    }
    Path onPath = findOnPath("redis-server");
    return onPath != null ? onPath : embedded();
  }

  /** Says where {@link #locate()} would take the binary from, for log and error messages. */
  static String describe(Path binary) {
    return binary.getFileName().toString().startsWith("kvindex-redis-server-")
        ? "embedded redis-server " + EMBEDDED_VERSION
        : binary.toString();
  }

  private static Path findOnPath(String name) {
    String path = System.getenv("PATH");
    if (path == null) {
      return null;
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, name);
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    return null;
  }

  private static synchronized Path embedded() {
    if (extracted != null && Files.isExecutable(extracted)) {
      return extracted;
    }
    String resource = "redis-server-" + EMBEDDED_VERSION + "-" + platform();
    try (InputStream in = RedisBinary.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new LocalRedisException(
            "resource "
                + resource
                + " not found: put org.signal:embedded-redis on the classpath, install"
                + " redis-server on the PATH, or set "
                + ENV);
      }
      Path dir = Files.createTempDirectory("kvindex-redis-bin-");
      Reaper.deleteOnExit(dir);
      Path file = dir.resolve("kvindex-redis-server-" + EMBEDDED_VERSION);
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      if (!file.toFile().setExecutable(true, true)) {
        throw new LocalRedisException("cannot make " + file + " executable; set " + ENV);
      }
      extracted = file;
      return file;
    } catch (IOException e) {
      throw new LocalRedisException(
          "cannot extract the embedded redis-server to the temp directory; free disk space or set "
              + ENV,
          e);
    }
  }

  private static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String osPart;
    if (os.contains("linux")) {
      osPart = "linux";
    } else if (os.contains("mac") || os.contains("darwin")) {
      osPart = "darwin";
    } else {
      throw unsupported(os, arch);
    }
    String archPart =
        switch (arch) {
          case "amd64", "x86_64" -> "amd64";
          case "aarch64", "arm64" -> "arm64";
          case "x86", "i386", "i486", "i586", "i686" -> "386";
          default -> throw unsupported(os, arch);
        };
    if (osPart.equals("darwin") && archPart.equals("386")) {
      throw unsupported(os, arch);
    }
    return osPart + "-" + archPart;
  }

  private static LocalRedisException unsupported(String os, String arch) {
    return new LocalRedisException(
        "no embedded redis-server for "
            + os
            + "/"
            + arch
            + ": install redis-server on the PATH or set "
            + ENV
            + " to a redis-server binary");
  }
}
