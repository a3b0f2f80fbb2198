package io.kvindex.service;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The read and idle timeouts of the JDK's HTTP server, which it takes only from {@code
 * sun.net.httpserver.*} system properties, read once per process when its first server starts: so
 * they are process-wide, and every {@link HttpService} of a process must ask the same ones.
 * Thread-safe.
 *
 * <p>{@code maxReqTime} closes a connection whose request has not fully arrived (request line,
 * headers and body) that long after its first byte, {@code maxRspTime} one whose answer has not
 * been taken in that long after it started; {@code idleInterval} closes a kept-alive connection
 * idle that long, and a new one that sent nothing within the shorter of the two. The JDK counts
 * them in whole seconds and checks them on two timers ({@code timerMillis}, {@code clockTick}), set
 * here to a quarter of the shortest timeout so a connection is closed close to its time.
 */
final class ServerTimeouts {
  private static final Duration LONGEST_TICK = Duration.ofSeconds(1);
  private static final Duration LONGEST_IDLE_TICK = Duration.ofSeconds(10);
  private static final Duration SHORTEST_TICK = Duration.ofMillis(100);

  private record Installed(Duration read, Duration idle) {
    @Override
    public String toString() {
      return "read " + Durations.format(read) + ", idle " + Durations.format(idle);
    }
  }

  private static Installed installed;

  private ServerTimeouts() {}

  /**
   * Sets the properties before this process's first server, or checks that a later server asks for
   * the values already set.
   *
   * @throws IllegalStateException if an earlier server of this process set other values
   */
  static synchronized void install(Duration read, Duration idle) {
    Installed wanted = new Installed(read, idle);
    if (installed == null) {
      properties(read, idle).forEach(System::setProperty);
      installed = wanted;
    } else if (!installed.equals(wanted)) {
      throw new IllegalStateException(
          "HTTP timeouts are process-wide (the JDK's HTTP server reads them once): this process"
              + " already serves with "
              + installed
              + "; this server asked for "
              + wanted
              + ". Give every HTTP endpoint of the process the same timeouts");
    }
  }

  /** The system properties for these timeouts, each whole seconds of at least 1. */
  static Map<String, String> properties(Duration read, Duration idle) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("sun.net.httpserver.maxReqTime", Long.toString(read.toSeconds()));
    p.put("sun.net.httpserver.maxRspTime", Long.toString(read.toSeconds()));
    p.put("sun.net.httpserver.idleInterval", Long.toString(idle.toSeconds()));
    p.put("sun.net.httpserver.timerMillis", Long.toString(tick(read, LONGEST_TICK)));
    Duration shortest = read.compareTo(idle) < 0 ? read : idle;
    p.put("sun.net.httpserver.clockTick", Long.toString(tick(shortest, LONGEST_IDLE_TICK)));
    return p;
  }

  private static long tick(Duration timeout, Duration longest) {
    long quarter = timeout.toMillis() / 4;
    return Math.max(SHORTEST_TICK.toMillis(), Math.min(longest.toMillis(), quarter));
  }
}
