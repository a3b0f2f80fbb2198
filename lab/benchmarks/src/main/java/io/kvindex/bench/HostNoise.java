package io.kvindex.bench;

import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the machine did to a Redis server while a measurement ran, so that a long command can be
 * told apart from the work it did: the server main thread's CPU time (INFO cpu), and for a server
 * that this benchmark started on this Linux machine, how often the kernel took the server off the
 * CPU against its will ({@code nonvoluntary_ctxt_switches} of its {@code /proc/<pid>/status}) and
 * the machine's steal time (the {@code /proc/stat} CPU time that the hypervisor gave to other
 * guests). A counter that cannot be read is left out. Immutable.
 */
final class HostNoise {
  /** Linux reports /proc/stat in USER_HZ ticks, 100 per second on every common platform. */
  private static final double MS_PER_TICK = 10.0;

  private final double mainThreadCpuMs;
  private final long involuntarySwitches;
  private final long stealTicks;

  private HostNoise(double mainThreadCpuMs, long involuntarySwitches, long stealTicks) {
    this.mainThreadCpuMs = mainThreadCpuMs;
    this.involuntarySwitches = involuntarySwitches;
    this.stealTicks = stealTicks;
  }

  /** Reads the counters now; {@code local} says the server is a process on this machine. */
  static HostNoise read(RedisCommands<String, String> admin, boolean local) {
    double cpuMs = mainThreadCpuMicros(admin) / 1000.0;
    long pid = -1;
    for (String line : admin.info("server").split("\\r?\\n")) {
      if (line.startsWith("process_id:")) {
        pid = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
      }
    }
    long switches = local && pid > 0 ? involuntarySwitches(pid) : -1;
    long steal = local ? stealTicks() : -1;
    return new HostNoise(cpuMs, switches, steal);
  }

  /** The server main thread's CPU time in microseconds (INFO cpu, microsecond resolution). */
  static long mainThreadCpuMicros(RedisCommands<String, String> admin) {
    double seconds = 0;
    for (String line : admin.info("cpu").split("\\r?\\n")) {
      if (line.startsWith("used_cpu_user_main_thread:")
          || line.startsWith("used_cpu_sys_main_thread:")) {
        seconds += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
      }
    }
    return Math.round(seconds * 1e6);
  }

  /** The counters' growth since {@code before}, under the names the results use. */
  Map<String, Number> since(HostNoise before) {
    Map<String, Number> out = new LinkedHashMap<>();
    out.put(
        "redis_main_thread_cpu_ms",
        LatencyRecorder.roundTenth(mainThreadCpuMs - before.mainThreadCpuMs));
    if (involuntarySwitches >= 0 && before.involuntarySwitches >= 0) {
      out.put(
          "redis_involuntary_context_switches", involuntarySwitches - before.involuntarySwitches);
    }
    if (stealTicks >= 0 && before.stealTicks >= 0) {
      out.put("machine_steal_ms", (stealTicks - before.stealTicks) * MS_PER_TICK);
    }
    return out;
  }

  /** How often the kernel took the CPU from the main thread of {@code pid}; -1 if unreadable. */
  static long involuntarySwitches(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("nonvoluntary_ctxt_switches:")) {
          return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }

  /**
   * The main thread of {@code pid}'s time on a CPU and waiting for one, in ns since it started
   * ({@code /proc/<pid>/task/<pid>/schedstat}), read while the thread sleeps: the scheduler brings
   * these up to date when a thread stops running, so a read while it runs can lag by up to a tick.
   * Waits up to about a millisecond for it to sleep; null if unreadable or it never did.
   */
  static long[] schedStatAsleep(long pid) {
    String p = Long.toString(pid);
    Path stat = Path.of("/proc", p, "task", p, "stat");
    Path sched = Path.of("/proc", p, "task", p, "schedstat");
    long deadline = System.nanoTime() + 1_000_000;
    try {
      do {
        if (sleeping(stat)) {
          String[] f = Files.readString(sched).trim().split(" ");
          if (sleeping(stat)) {
            return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])};
          }
        }
        Thread.onSpinWait();
      } while (System.nanoTime() < deadline);
    } catch (IOException | RuntimeException e) {
      return null;
    }
    return null;
  }

  /** Whether the state in a /proc stat file (the letter after the command's ")") is S. */
  private static boolean sleeping(Path stat) throws IOException {
    String s = Files.readString(stat);
    int close = s.lastIndexOf(')');
    return close >= 0 && close + 2 < s.length() && s.charAt(close + 2) == 'S';
  }

  private static long stealTicks() {
    try {
      List<String> lines = Files.readAllLines(Path.of("/proc/stat"));
      String[] cpu = lines.isEmpty() ? new String[0] : lines.get(0).trim().split("\\s+");
      // cpu user nice system idle iowait irq softirq steal ...
      return cpu.length > 8 && cpu[0].equals("cpu") ? Long.parseLong(cpu[8]) : -1;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }
}
