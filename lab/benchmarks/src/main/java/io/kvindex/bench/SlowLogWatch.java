package io.kvindex.bench;

import io.lettuce.core.api.sync.RedisCommands;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;

/**
 * The longest single command Redis ran while the watch was open, from SLOWLOG (execution time in
 * microseconds, network excluded), and the mean time per call of each command from INFO
 * commandstats.
 *
 * <p>The log threshold is {@link #THRESHOLD_MICROS}, not 0: Redis 7 also logs every command a
 * script calls, and logging each of them (an entry with copied arguments) slows a script that calls
 * thousands of commands several-fold, which would distort exactly what is measured. A script's
 * entry is logged after its inner ones, so it is the newest when the script ends. If no command
 * reached the threshold, the maximum is reported as the threshold, an upper bound ({@link
 * #maxBelowThreshold()}).
 *
 * <p>{@link #drain} reads and resets the log; it fails if the log filled up ({@link #CAPACITY}
 * entries) since the last drain, as an entry may have been lost. The watch's own bookkeeping
 * commands (SLOWLOG, CONFIG, INFO, PING, CLIENT, HELLO) are left out. Closing restores the two
 * settings. Not thread-safe.
 */
final class SlowLogWatch implements AutoCloseable {
  static final int CAPACITY = 50_000;
  static final int THRESHOLD_MICROS = 50;

  /** Commands this long or longer are counted in {@link #overOneMillisecond}. */
  static final int ONE_MILLISECOND_MICROS = 1000;

  /** Entries {@link #drainCall} reads: a script's own and those of its slow inner commands. */
  private static final int CALL_ENTRIES = 64;

  /** How many of the slowest commands {@link #slowest} keeps. */
  static final int SLOWEST_KEPT = 5;

  private static final Set<String> BOOKKEEPING =
      Set.of("slowlog", "config", "info", "ping", "client", "hello", "command");

  private final RedisCommands<String, String> admin;
  private final String savedThreshold;
  private final String savedLength;
  private long maxMicros;
  private String maxCommand = "none";
  private long drainNanos;
  private final CommandStats statsBefore;
  private final Map<String, Long> maxByCommand = new TreeMap<>();
  private final LatencyRecorder scripts = new LatencyRecorder();
  private final PriorityQueue<Slow> slowest =
      new PriorityQueue<>(Comparator.comparingLong(Slow::micros));
  private long overOneMillisecond;

  /** One logged command: its name and execution time. */
  record Slow(String command, long micros) {}

  private SlowLogWatch(RedisCommands<String, String> admin) {
    this.admin = admin;
    this.savedThreshold = setting("slowlog-log-slower-than");
    this.savedLength = setting("slowlog-max-len");
    admin.configSet("slowlog-max-len", Integer.toString(CAPACITY));
    admin.configSet("slowlog-log-slower-than", Integer.toString(THRESHOLD_MICROS));
    admin.slowlogReset();
    this.statsBefore = CommandStats.read(admin);
  }

  /** Starts logging every command, from an empty log. */
  static SlowLogWatch start(RedisCommands<String, String> admin) {
    return new SlowLogWatch(admin);
  }

  /** Reads every logged command into the maximum and empties the log. */
  void drain() {
    List<Slow> entries = read(-1);
    if (entries.size() >= CAPACITY) {
      throw new IllegalStateException(
          "SLOWLOG filled up (" + CAPACITY + " entries) between drains; drain more often");
    }
  }

  /**
   * Reads only the {@code count} newest entries and empties the log: after one script call, whose
   * own entry is the newest whatever its inner commands overflowed.
   */
  void drainNewest(int count) {
    read(count);
  }

  /**
   * After one script call: reads what it logged and empties the log; returns the script's own
   * execution time in microseconds, 0 if it ran under the threshold.
   */
  long drainCall() {
    long script = 0;
    for (Slow entry : read(CALL_ENTRIES)) {
      if (isScript(entry.command())) {
        script = Math.max(script, entry.micros());
      }
    }
    return script;
  }

  /** Nanoseconds spent reading the log, to take out of a wall time measured around drains. */
  long drainNanos() {
    return drainNanos;
  }

  private static boolean isScript(String command) {
    return command.equals("evalsha") || command.equals("eval");
  }

  /** Reads and empties the log, counting what is not bookkeeping; returns every entry read. */
  private List<Slow> read(int count) {
    long start = System.nanoTime();
    List<Slow> entries = new ArrayList<>();
    for (Object entry : admin.slowlogGet(count)) {
      List<?> fields = (List<?>) entry;
      List<?> args = (List<?>) fields.get(3);
      String name = args.isEmpty() ? "" : String.valueOf(args.get(0)).toLowerCase(Locale.ROOT);
      entries.add(new Slow(name, ((Number) fields.get(2)).longValue()));
    }
    admin.slowlogReset();
    for (Slow entry : entries) {
      String name = entry.command();
      long micros = entry.micros();
      if (BOOKKEEPING.contains(name)) {
        continue;
      }
      maxByCommand.merge(name, micros, Math::max);
      if (micros >= ONE_MILLISECOND_MICROS) {
        overOneMillisecond++;
      }
      slowest.add(entry);
      if (slowest.size() > SLOWEST_KEPT) {
        slowest.poll();
      }
      if (isScript(name)) {
        scripts.recordNanos(micros * 1000);
      }
      if (micros > maxMicros) {
        maxMicros = micros;
        maxCommand = name;
      }
    }
    drainNanos += System.nanoTime() - start;
    return entries;
  }

  /**
   * The longest command seen by the last {@link #drain}, in microseconds; {@link #THRESHOLD_MICROS}
   * if none reached it.
   */
  long maxMicros() {
    return Math.max(maxMicros, maxBelowThreshold() ? THRESHOLD_MICROS : 0);
  }

  /** True if no command reached the log threshold: {@link #maxMicros} is an upper bound. */
  boolean maxBelowThreshold() {
    return maxMicros < THRESHOLD_MICROS;
  }

  /** Durations of the logged script calls (EVALSHA, EVAL) of at least the threshold. */
  LatencyRecorder loggedScripts() {
    return scripts;
  }

  /** Calls and mean microseconds per call of each command since the watch started. */
  Map<String, Map<String, Number>> meanByCommand() {
    return CommandStats.read(admin).since(statsBefore);
  }

  /** The {@link #SLOWEST_KEPT} longest commands logged, longest first. */
  List<Slow> slowest() {
    return slowest.stream().sorted(Comparator.comparingLong(Slow::micros).reversed()).toList();
  }

  /** How many logged commands took at least {@link #ONE_MILLISECOND_MICROS}. */
  long overOneMillisecond() {
    return overOneMillisecond;
  }

  /** The name of the longest command ({@code evalsha}, {@code eval}, ...). */
  String maxCommand() {
    return maxCommand;
  }

  /** The longest logged run per command name. */
  Map<String, Long> maxByCommand() {
    return Map.copyOf(maxByCommand);
  }

  private String setting(String name) {
    return admin.configGet(name).get(name);
  }

  @Override
  public void close() {
    admin.configSet("slowlog-log-slower-than", savedThreshold);
    admin.configSet("slowlog-max-len", savedLength);
    admin.slowlogReset();
  }
}
