package io.kvindex.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * While open, puts the main thread of the Redis server a benchmark started on a CPU of its own, at
 * real-time priority, and every other thread (Redis's helpers, the benchmark's) on the others, as
 * production runs Redis on a core nothing else shares; {@link #close} gives everything its CPUs and
 * its normal priority back. On a small machine the client's threads, the kernel's network softirq
 * thread and other tenants otherwise take the server's CPU in the middle of a command: a script
 * that runs 200 µs then shows in SLOWLOG as 3 ms, and the benchmark measures the machine instead of
 * the script. The real-time class (SCHED_FIFO 1) only decides who runs when the server is runnable;
 * the kernel's real-time throttling still leaves 5 % of each second to other threads. Uses {@code
 * taskset} and {@code chrt} (util-linux). With fewer than two usable CPUs, without taskset, or with
 * {@code KVINDEX_BENCH_PIN=0}, nothing moves; with {@code KVINDEX_BENCH_PIN=cpu} or without the
 * right to use the real-time class, the server moves but keeps its priority; {@link #description}
 * says which. The benchmark runs in every case.
 */
final class CpuPlacement implements AutoCloseable {
  static final String DISABLE_ENV = "KVINDEX_BENCH_PIN";
  private static final Logger log = LoggerFactory.getLogger(CpuPlacement.class);

  /** {@link #DISABLE_ENV} set to this moves the server but keeps its normal priority. */
  static final String CPU_ONLY = "cpu";

  private final String description;
  private final long serverPid;
  private final String original;
  private final boolean realTime;

  private CpuPlacement(String description, long serverPid, String original, boolean realTime) {
    this.description = description;
    this.serverPid = serverPid;
    this.original = original;
    this.realTime = realTime;
  }

  /**
   * Moves the main thread of {@code serverPid} to the last CPU this process may use, and the
   * server's other threads and every thread of this process to the rest.
   */
  static CpuPlacement separate(long serverPid) {
    if ("0".equals(System.getenv(DISABLE_ENV))) {
      return unmoved("shared: " + DISABLE_ENV + "=0");
    }
    long self = ProcessHandle.current().pid();
    try {
      String original = affinityOf(self);
      List<Integer> cpus = parseCpuList(original);
      if (cpus.size() < 2) {
        return unmoved("shared: this process may use one CPU only");
      }
      int server = cpus.get(cpus.size() - 1);
      String clients = join(cpus.subList(0, cpus.size() - 1));
      run("taskset", "-a", "-p", "-c", clients, Long.toString(self));
      // The main thread alone: Redis's helper threads (jemalloc's purger, lazy free) stay with
      // the benchmark, or they would take the main thread's CPU from it mid-command.
      for (long thread : threadsOf(serverPid)) {
        taskset(thread == serverPid ? Integer.toString(server) : clients, thread);
      }
      Priority priority = realTime(serverPid);
      return new CpuPlacement(
          "redis-server's main thread on CPU "
              + server
              + " "
              + priority.description()
              + ", its helper threads and the benchmark's on CPU "
              + clients,
          serverPid,
          original,
          priority.realTime());
    } catch (IOException e) {
      log.warn(
          "could not give redis-server a CPU of its own ({}); its commands may be stretched by the"
              + " benchmark's own threads. Install util-linux (taskset) to separate them.",
          e.getMessage());
      return unmoved("shared: " + e.getMessage());
    }
  }

  /** A placement that moved nothing, for the reason given. */
  static CpuPlacement unmoved(String why) {
    return new CpuPlacement(why, -1, null, false);
  }

  /** How the server's main thread runs: whether in the real-time class, and in words. */
  private record Priority(boolean realTime, String description) {}

  /**
   * Gives the server's main thread (only it: {@code chrt -p} without {@code -a}) the real-time
   * class, and says how it runs.
   */
  private static Priority realTime(long serverPid) {
    if (CPU_ONLY.equals(System.getenv(DISABLE_ENV))) {
      return new Priority(false, "with its normal priority (" + DISABLE_ENV + "=" + CPU_ONLY + ")");
    }
    try {
      run("chrt", "-f", "-p", "1", Long.toString(serverPid));
      return new Priority(true, "at real-time priority (SCHED_FIFO 1)");
    } catch (IOException e) {
      log.warn(
          "could not give redis-server real-time priority ({}); the kernel's own threads may still"
              + " take its CPU mid-command. Run the benchmark with the right to use chrt -f"
              + " (CAP_SYS_NICE) to prevent that.",
          e.getMessage());
      return new Priority(false, "with its normal priority (chrt failed: " + e.getMessage() + ")");
    }
  }

  /** What was done, for the results. */
  String description() {
    return description;
  }

  /** Gives the server's threads and this process's the CPUs this process had before. */
  @Override
  public void close() {
    if (original == null) {
      return;
    }
    try {
      if (realTime) {
        run("chrt", "-o", "-p", "0", Long.toString(serverPid));
      }
      run("taskset", "-a", "-p", "-c", original.trim(), Long.toString(serverPid));
      run(
          "taskset",
          "-a",
          "-p",
          "-c",
          original.trim(),
          Long.toString(ProcessHandle.current().pid()));
    } catch (IOException e) {
      log.warn(
          "could not give the benchmark its CPUs, or redis-server its priority, back ({}); later"
              + " figures run on fewer CPUs",
          e.getMessage());
    }
  }

  /** Expands a Linux CPU list such as {@code 0-3,6,8-9}. */
  static List<Integer> parseCpuList(String list) {
    List<Integer> cpus = new ArrayList<>();
    for (String part : list.trim().split(",")) {
      if (part.isBlank()) {
        continue;
      }
      int dash = part.indexOf('-');
      int from = Integer.parseInt(part.substring(0, dash < 0 ? part.length() : dash).trim());
      int to = dash < 0 ? from : Integer.parseInt(part.substring(dash + 1).trim());
      for (int c = from; c <= to; c++) {
        cpus.add(c);
      }
    }
    return cpus;
  }

  private static String join(List<Integer> cpus) {
    return cpus.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  /** The CPU list of a process: {@code taskset -cp} prints "pid N's current affinity list: L". */
  private static String affinityOf(long pid) throws IOException {
    String out = run("taskset", "-cp", Long.toString(pid));
    int colon = out.lastIndexOf(':');
    if (colon < 0) {
      throw new IOException("unexpected taskset output: " + out.trim());
    }
    return out.substring(colon + 1);
  }

  private static void taskset(String cpus, long thread) throws IOException {
    run("taskset", "-p", "-c", cpus, Long.toString(thread));
  }

  /** The thread ids of a process (Linux /proc), its main thread's id being the process id. */
  private static List<Long> threadsOf(long pid) throws IOException {
    try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
      return tasks.map(t -> Long.parseLong(t.getFileName().toString())).toList();
    }
  }

  private static String run(String... command) throws IOException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!process.waitFor(10, TimeUnit.SECONDS) || process.exitValue() != 0) {
        throw new IOException(String.join(" ", command) + " failed: " + out.trim());
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while running " + command[0], e);
    } finally {
      process.destroy();
    }
  }
}
