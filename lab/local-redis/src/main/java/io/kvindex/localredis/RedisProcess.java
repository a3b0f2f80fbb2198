package io.kvindex.localredis;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One foreground redis-server process on 127.0.0.1 with its own temp directory (log, nodes.conf).
 * Serves as both the standalone handle and a cluster node handle. Thread-safe: state changes are
 * {@code synchronized}.
 */
final class RedisProcess implements LocalRedis, ClusterNode {
  private static final Logger log = LoggerFactory.getLogger(RedisProcess.class);
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
  private static final int BIND_ATTEMPTS = 5;
  private static final String HOST = "127.0.0.1";

  private final ServerConfig config;
  private final Path dir;
  private final int port;
  private volatile Process process;
  private volatile boolean paused;
  private volatile boolean closed;
  private volatile String nodeId;

  private RedisProcess(ServerConfig config, Path dir, int port) {
    this.config = config;
    this.dir = dir;
    this.port = port;
  }

  /**
   * Starts a server on a fresh free port, trying other ports if another process takes the chosen
   * one first, and returns once it answers PING.
   */
  /** Closes every process, even when some fail to; the first failure is thrown, the rest added. */
  static void closeAll(Iterable<RedisProcess> processes) {
    RuntimeException first = null;
    for (RedisProcess node : processes) {
      try {
        node.close();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  static RedisProcess start(ServerConfig config) {
    LocalRedisException last = null;
    for (int attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
      int port = Ports.pickFree(config.clusterEnabled());
      RedisProcess node = new RedisProcess(config, tempDir(), port);
      try {
        node.launch();
        return node;
      } catch (PortTakenException e) {
        last = e;
        node.close();
      } catch (RuntimeException e) {
        node.close();
        throw e;
      }
    }
    throw new LocalRedisException(
        "redis-server found its port taken " + BIND_ATTEMPTS + " times in a row", last);
  }

  private static Path tempDir() {
    try {
      return Files.createTempDirectory("kvindex-redis-");
    } catch (IOException e) {
      throw new LocalRedisException("cannot create a temp directory; free disk space", e);
    }
  }

  private synchronized void launch() {
    if (closed) {
      throw new IllegalStateException("node on port " + port + " is closed");
    }
    long started = System.nanoTime();
    Reaper.register(this);
    process = spawn();
    paused = false;
    awaitReady();
    log.debug(
        "{} on {}:{} (pid {}) ready in {} ms",
        RedisBinary.describe(config.binary()),
        HOST,
        port,
        process.pid(),
        (System.nanoTime() - started) / 1_000_000);
  }

  private Process spawn() {
    writeSentinelFile();
    ProcessBuilder builder =
        new ProcessBuilder(config.command(port, dir))
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()));
    IOException last = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        return builder.start();
      } catch (IOException e) {
        // "Text file busy" can happen right after the binary was extracted; try again.
        last = e;
        Polling.pause();
      }
    }
    throw new LocalRedisException(
        "cannot run "
            + config.binary()
            + " ("
            + last.getMessage()
            + "); set "
            + RedisBinary.ENV
            + " to a working redis-server binary",
        last);
  }

  /** A Sentinel's file, written once: on a restart it keeps what the Sentinel wrote since. */
  private void writeSentinelFile() {
    Path file = ServerConfig.sentinelFile(dir);
    if (!config.sentinel() || Files.exists(file)) {
      return;
    }
    try {
      Files.write(file, config.sentinelConfig(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new LocalRedisException("cannot write " + file + "; free disk space", e);
    }
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + config.startupTimeout().toNanos();
    while (true) {
      Process current = process;
      if (!current.isAlive()) {
        String tail = logTail();
        if (tail.contains("Address already in use")) {
          throw new PortTakenException(port);
        }
        throw failure("exited with code " + current.exitValue() + " while starting", tail);
      }
      if (answersAsItself(current.pid())) {
        return;
      }
      if (System.nanoTime() > deadline) {
        current.destroyForcibly();
        throw failure(
            "did not answer PING within " + config.startupTimeout().toMillis() + " ms", logTail());
      }
      Polling.pause();
    }
  }

  /** True once the server on our port answers and reports our pid (never another server). */
  private boolean answersAsItself(long pid) {
    try {
      String info = Resp.text(config.sockets(), port, Duration.ofMillis(500), "INFO", "server");
      return Long.toString(pid).equals(Resp.field(info, "process_id"));
    } catch (IOException e) {
      return false;
    }
  }

  private LocalRedisException failure(String what, String tail) {
    return new LocalRedisException(
        RedisBinary.describe(config.binary())
            + " on "
            + HOST
            + ":"
            + port
            + " "
            + what
            + ". Its log ended with:\n"
            + tail
            + "\nFix the cause shown above (a bad setting, a missing library), or set "
            + RedisBinary.ENV
            + " to a working redis-server 7.x binary.");
  }

  private String logTail() {
    try {
      List<String> lines = Files.readAllLines(logFile(), StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  @Override
  public String host() {
    return HOST;
  }

  @Override
  public int port() {
    return port;
  }

  @Override
  public URI uri() {
    return URI.create((config.tls() != null ? "rediss://" : "redis://") + HOST + ":" + port);
  }

  @Override
  public long pid() {
    return process.pid();
  }

  @Override
  public boolean isRunning() {
    Process current = process;
    return current != null && current.isAlive();
  }

  @Override
  public boolean isPaused() {
    return paused && isRunning();
  }

  @Override
  public synchronized void stop() {
    if (!isRunning()) {
      return;
    }
    if (paused) {
      resume();
    }
    try {
      Resp.call(config.sockets(), port, CONTROL_TIMEOUT, "SHUTDOWN", "NOSAVE");
    } catch (IOException e) {
      // The server closes the connection without a reply when it shuts down.
    }
    if (!waitForExit(process)) {
      kill();
    }
  }

  @Override
  public synchronized void kill() {
    Process current = process;
    if (current == null) {
      return;
    }
    current.destroyForcibly();
    if (!waitForExit(current)) {
      throw new LocalRedisException(
          "redis-server pid " + current.pid() + " survived SIGKILL for " + EXIT_TIMEOUT);
    }
    paused = false;
  }

  private static boolean waitForExit(Process p) {
    try {
      return p.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalRedisException("interrupted while waiting for redis-server to exit", e);
    }
  }

  @Override
  public synchronized void pause() {
    requireRunning("pause");
    signal("STOP");
    paused = true;
  }

  @Override
  public synchronized void resume() {
    requireRunning("resume");
    signal("CONT");
    paused = false;
  }

  private void signal(String name) {
    long pid = process.pid();
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).start();
      if (!kill.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) || kill.exitValue() != 0) {
        throw new LocalRedisException("kill -" + name + " " + pid + " failed");
      }
    } catch (IOException e) {
      throw new LocalRedisException(
          "cannot run kill -" + name + " " + pid + "; pause() needs a Unix kill command", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalRedisException("interrupted while sending SIG" + name, e);
    }
  }

  @Override
  public void clientPause(Duration duration) {
    ServerConfig.checkPositive(duration, "duration");
    requireRunning("clientPause");
    command("CLIENT", "PAUSE", Long.toString(duration.toMillis()));
  }

  @Override
  public synchronized void restart() {
    if (isRunning()) {
      stop();
    }
    launch();
  }

  @Override
  public Path logFile() {
    return dir.resolve("redis.log");
  }

  @Override
  public String nodeId() {
    String id = nodeId;
    if (id == null) {
      if (!config.clusterEnabled()) {
        throw new IllegalStateException("node on port " + port + " is not cluster-enabled");
      }
      id = (String) command("CLUSTER", "MYID");
      nodeId = id;
    }
    return id;
  }

  @Override
  public Role role() {
    Object reply = command("ROLE");
    String role = String.valueOf(((List<?>) reply).get(0));
    return role.equals("master") ? Role.PRIMARY : Role.REPLICA;
  }

  /** Runs a control command on this node; failures become {@link LocalRedisException}. */
  Object command(String... args) {
    return command(CONTROL_TIMEOUT, args);
  }

  /** As {@link #command(String...)}, waiting up to {@code timeout} for the reply. */
  Object command(Duration timeout, String... args) {
    try {
      return Resp.call(config.sockets(), port, timeout, args);
    } catch (IOException e) {
      throw new LocalRedisException(
          String.join(" ", args) + " on " + HOST + ":" + port + " failed: " + e.getMessage(), e);
    }
  }

  /** Like {@link #command} but returns {@code null} instead of throwing, for polling. */
  Object tryCommand(String... args) {
    try {
      return Resp.call(config.sockets(), port, Duration.ofMillis(500), args);
    } catch (IOException e) {
      return null;
    }
  }

  private void requireRunning(String what) {
    if (!isRunning()) {
      throw new IllegalStateException(
          what + "() needs a running server; node on port " + port + " is not running");
    }
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      kill();
    } finally {
      Reaper.unregister(this);
      Reaper.deleteTree(dir);
    }
  }

  @Override
  public String toString() {
    return "redis-server " + HOST + ":" + port;
  }

  /** Another process bound the port between our check and redis-server's bind. */
  private static final class PortTakenException extends LocalRedisException {
    private static final long serialVersionUID = 1L;

    PortTakenException(int port) {
      super("port " + port + " was taken before redis-server could bind it");
    }
  }
}
