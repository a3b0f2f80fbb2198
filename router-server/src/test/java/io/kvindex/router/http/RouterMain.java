package io.kvindex.router.http;

import picocli.CommandLine;

/**
 * {@code kvindex router} in a JVM of its own, for tests of what is process-wide (the JDK HTTP
 * server's timeouts). Not thread-safe; run once per process.
 */
public final class RouterMain {
  private RouterMain() {}

  public static void main(String[] args) {
    System.exit(new CommandLine(new RouterCommand()).execute(args));
  }
}
