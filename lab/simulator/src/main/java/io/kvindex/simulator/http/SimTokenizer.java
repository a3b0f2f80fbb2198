package io.kvindex.simulator.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A deterministic stand-in for a model's tokenizer and chat template: a word is a token, its id
 * drawn from its text; a chat turn is wrapped in start and end tokens with a token for its role.
 * Thread-safe (stateless).
 */
final class SimTokenizer {
  static final int BOS = 1;
  static final int TURN_START = 2;
  static final int TURN_END = 3;
  private static final int FIRST_WORD = 1000;
  private static final int WORDS = 30_000;

  private SimTokenizer() {}

  /** A completion's prompt; {@code addSpecial} puts the beginning-of-sequence token first. */
  static int[] prompt(String text, boolean addSpecial) {
    List<Integer> out = new ArrayList<>();
    if (addSpecial) {
      out.add(BOS);
    }
    words(text, out);
    return ints(out);
  }

  /**
   * A chat's prompt through the template: per turn its start, its role, its words, its end; then,
   * with {@code generationPrompt}, the start of the assistant's turn.
   */
  static int[] chat(List<String[]> turns, boolean generationPrompt, boolean addSpecial) {
    List<Integer> out = new ArrayList<>();
    if (addSpecial) {
      out.add(BOS);
    }
    for (String[] turn : turns) {
      out.add(TURN_START);
      out.add(role(turn[0]));
      words(turn[1], out);
      out.add(TURN_END);
    }
    if (generationPrompt) {
      out.add(TURN_START);
      out.add(role("assistant"));
    }
    return ints(out);
  }

  /** What the engine generates for a prompt: {@code n} tokens drawn from it. */
  static int[] output(int[] prompt, int n) {
    long h = 1125899906842597L;
    for (int t : prompt) {
      h = 31 * h + t;
    }
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      h = h * 6364136223846793005L + 1442695040888963407L;
      out[i] = FIRST_WORD + (int) Math.floorMod(h >>> 17, (long) WORDS);
    }
    return out;
  }

  /** The text of generated tokens: {@code t<id>} per token, space-separated. */
  static String text(int[] tokens) {
    StringBuilder out = new StringBuilder();
    for (int t : tokens) {
      out.append('t').append(t).append(' ');
    }
    return out.toString();
  }

  private static int role(String role) {
    return switch (role.toLowerCase(Locale.ROOT)) {
      case "system", "developer" -> 10;
      case "assistant" -> 12;
      case "tool" -> 13;
      default -> 11;
    };
  }

  private static void words(String text, List<Integer> out) {
    for (String w : text.trim().split("\\s+")) {
      if (!w.isEmpty()) {
        out.add(FIRST_WORD + Math.floorMod(w.hashCode(), WORDS));
      }
    }
  }

  private static int[] ints(List<Integer> list) {
    return list.stream().mapToInt(Integer::intValue).toArray();
  }
}
