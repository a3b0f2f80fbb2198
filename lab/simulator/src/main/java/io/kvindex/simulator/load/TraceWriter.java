package io.kvindex.simulator.load;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Writes a Mooncake-format trace shaped like the public conversation traces, so that trace runs
 * need no downloaded data: multi-turn sessions whose every turn repeats the session's history (a
 * shared system prompt, then the turns so far) and adds a new turn, interleaved across many
 * sessions, arriving as a Poisson process. With the defaults a prompt averages about 23 hash ids of
 * 512 tokens (about 12 000 tokens, 750 blocks of 16), over a trace of 12 000 records and over its
 * later part alike, where every session has a history: a system prompt of 6 ids, a first turn of
 * 8-11, then 2-3 per turn. Thread-safe (stateless).
 */
public final class TraceWriter {
  /** Tokens per hash id, as in Mooncake's traces. */
  public static final int BLOCK_TOKENS = 512;

  private static final int SYSTEM_PROMPTS = 8;
  private static final int SYSTEM_IDS = 6;
  private static final int FIRST_TURN_IDS = 8;
  private static final int TURN_IDS = 2;
  private static final int MAX_TURNS = 10;
  private static final int ACTIVE_SESSIONS = 256;

  private TraceWriter() {}

  /**
   * Writes {@code requests} records to {@code file} (replacing it).
   *
   * @param requestsPerSecond the mean arrival rate the timestamps follow
   */
  public static void write(Path file, int requests, double requestsPerSecond, long seed)
      throws IOException {
    if (requests < 1 || !(requestsPerSecond > 0)) {
      throw new IllegalArgumentException(
          "need at least 1 request and a positive rate, got "
              + requests
              + " at "
              + requestsPerSecond);
    }
    SplittableRandom random = new SplittableRandom(seed);
    List<Session> active = new ArrayList<>();
    long[] nextId = {SYSTEM_PROMPTS * SYSTEM_IDS};
    double at = 0;
    try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (int i = 0; i < requests; i++) {
        while (active.size() < ACTIVE_SESSIONS) {
          active.add(Session.start(random, nextId));
        }
        int pick = random.nextInt(active.size());
        Session s = active.get(pick);
        List<Long> ids = s.nextTurn(random, nextId);
        if (s.turns == MAX_TURNS || random.nextInt(8) == 0) {
          active.remove(pick);
        }
        at += -Math.log(1 - random.nextDouble()) / requestsPerSecond;
        out.write(record((long) (at * 1000), ids, random));
        out.newLine();
      }
    }
  }

  private static String record(long timestampMillis, List<Long> ids, SplittableRandom random) {
    int input = ids.size() * BLOCK_TOKENS - random.nextInt(BLOCK_TOKENS);
    StringBuilder s = new StringBuilder(32 + ids.size() * 8);
    s.append("{\"timestamp\": ").append(timestampMillis);
    s.append(", \"input_length\": ").append(input);
    s.append(", \"output_length\": ").append(64 + random.nextInt(448));
    s.append(", \"hash_ids\": [");
    for (int i = 0; i < ids.size(); i++) {
      s.append(i == 0 ? "" : ", ").append(ids.get(i));
    }
    return s.append("]}").toString();
  }

  /** One conversation: its history of hash ids, grown a turn at a time. */
  private static final class Session {
    final List<Long> history = new ArrayList<>();
    int turns;

    static Session start(SplittableRandom random, long[] nextId) {
      Session s = new Session();
      long system = (long) random.nextInt(SYSTEM_PROMPTS) * SYSTEM_IDS;
      for (int i = 0; i < SYSTEM_IDS; i++) {
        s.history.add(system + i);
      }
      return s;
    }

    List<Long> nextTurn(SplittableRandom random, long[] nextId) {
      int added = turns == 0 ? FIRST_TURN_IDS + random.nextInt(4) : TURN_IDS + random.nextInt(2);
      for (int i = 0; i < added; i++) {
        history.add(nextId[0]++);
      }
      turns++;
      return List.copyOf(history);
    }
  }
}
