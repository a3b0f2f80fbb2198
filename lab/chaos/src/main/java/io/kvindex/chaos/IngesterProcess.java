package io.kvindex.chaos;

import io.kvindex.ingester.IngesterCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;

/**
 * An ingester in a JVM of its own, with a heap of its own ({@code -Xmx}): what a chaos scenario
 * that measures an ingester's memory runs, since the demo's in-process ingesters share the demo's
 * heap. Its output goes to a log file. Not thread-safe: one thread drives it.
 */
final class IngesterProcess implements AutoCloseable {
  private final Process process;
  private final Path log;
  private final int httpPort;

  private IngesterProcess(Process process, Path log, int httpPort) {
    this.process = process;
    this.log = log;
    this.httpPort = httpPort;
  }

  /** The child's entry point: {@code kvindex ingester} with these arguments. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new IngesterCommand()).execute(args));
  }

  /**
   * Starts {@code kvindex ingester} with {@code args} (and {@code --http-port} of a free loopback
   * port) in a new JVM on this JVM's class path, with {@code jvmOptions} (such as {@code
   * -Xmx384m}); an OutOfMemoryError ends it ({@code -XX:+ExitOnOutOfMemoryError}), as it would end
   * a pod.
   */
  static IngesterProcess start(List<String> jvmOptions, List<String> args, Path log) {
    int port = freePort();
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(jvmOptions);
    command.add("-XX:+ExitOnOutOfMemoryError");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(IngesterProcess.class.getName());
    command.addAll(args);
    command.add("--http-host=127.0.0.1");
    command.add("--http-port=" + port);
    try {
      Files.createDirectories(log.toAbsolutePath().getParent());
      Process p =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()))
              .start();
      return new IngesterProcess(p, log, port);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start an ingester JVM (" + command.get(0) + ")", e);
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port for the ingester's HTTP", e);
    }
  }

  int httpPort() {
    return httpPort;
  }

  boolean alive() {
    return process.isAlive();
  }

  /** The exit code, or -1 while it runs. */
  int exitCode() {
    return process.isAlive() ? -1 : process.exitValue();
  }

  /** Whether its output reports an OutOfMemoryError. */
  boolean ranOutOfMemory() {
    try {
      return Files.exists(log) && Files.readString(log).contains("OutOfMemoryError");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the ingester's log " + log, e);
    }
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(15, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
    }
  }
}
