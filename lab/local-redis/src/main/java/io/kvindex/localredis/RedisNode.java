package io.kvindex.localredis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A redis-server process started by this library on 127.0.0.1, with the faults a test may inject
 * into it. Every method that changes the process waits until the change has happened: after {@link
 * #kill()} the port refuses connections, after {@link #restart()} the server answers PING.
 *
 * <p>Thread-safe: methods that change the process are serialised per node.
 */
public interface RedisNode {
  /** The host the server listens on: always {@code 127.0.0.1}. */
  String host();

  /** The port the server listens on; it stays the same across {@link #restart()}. */
  int port();

  /** {@code redis://127.0.0.1:<port>}, for {@code RedisURI.create(uri)}. */
  URI uri();

  /** The operating-system id of the current process (a new one after {@link #restart()}). */
  long pid();

  /** Whether the process is alive (a paused process is alive). */
  boolean isRunning();

  /** Whether the process is stopped by {@link #pause()}. */
  boolean isPaused();

  /** Shuts the server down cleanly ({@code SHUTDOWN NOSAVE}, SIGKILL if that fails). */
  void stop();

  /** Ends the process with SIGKILL, as a crash would; returns once it is gone. */
  void kill();

  /** Freezes the process with SIGSTOP: connections stay open but nothing answers. */
  void pause();

  /** Wakes a process frozen by {@link #pause()} with SIGCONT. */
  void resume();

  /** Makes the server hold client commands for {@code duration} ({@code CLIENT PAUSE}). */
  void clientPause(Duration duration);

  /**
   * Starts the server again on the same port with the same settings, stopping it first if it runs.
   * Data is not kept (no persistence); a cluster node keeps its node id and peers.
   */
  void restart();

  /** The file the server logs to. */
  Path logFile();
}
