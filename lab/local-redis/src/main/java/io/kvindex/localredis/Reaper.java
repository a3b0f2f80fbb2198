package io.kvindex.localredis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Ends every live redis-server process and deletes every temp directory of this JVM when the JVM
 * exits, so an interrupted run leaves nothing behind. Thread-safe.
 */
final class Reaper {
  private static final Set<RedisProcess> LIVE = ConcurrentHashMap.newKeySet();
  private static final Set<Path> DIRS = ConcurrentHashMap.newKeySet();
  private static boolean hooked;

  private Reaper() {}

  static void register(RedisProcess process) {
    hook();
    LIVE.add(process);
  }

  static void unregister(RedisProcess process) {
    LIVE.remove(process);
  }

  static void deleteOnExit(Path dir) {
    hook();
    DIRS.add(dir);
  }

  private static synchronized void hook() {
    if (!hooked) {
      Runtime.getRuntime().addShutdownHook(new Thread(Reaper::reap, "kvindex-local-redis-reaper"));
      hooked = true;
    }
  }

  private static void reap() {
    for (RedisProcess process : LIVE) {
      try {
        process.close();
      } catch (RuntimeException e) {
        // Best effort while the JVM exits: go on with the others.
      }
    }
    for (Path dir : DIRS) {
      try {
        deleteTree(dir);
      } catch (UncheckedIOException e) {
        // Best effort while the JVM exits.
      }
    }
  }

  /** Deletes a directory and everything in it; a missing directory is fine. */
  static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try {
      Files.walkFileTree(
          dir,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                throws IOException {
              Files.deleteIfExists(file);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
              if (e instanceof NoSuchFileException) {
                return FileVisitResult.CONTINUE;
              }
              throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
              Files.deleteIfExists(d);
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + dir, e);
    }
  }
}
