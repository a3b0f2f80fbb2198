package io.kvindex.simulator.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvindex.simulator.InferenceRequest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.NoSuchElementException;

/**
 * A Mooncake-format trace read lazily, one JSON line at a time. Token ids are derived from the
 * trace's hash ids: id {@code h} expands to {@code blockTokens} tokens that depend only on {@code
 * h}; prompt tokens past the listed ids and all output tokens are unique to the request. Not
 * thread-safe.
 */
final class MooncakeTrace implements Workload {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int VOCABULARY = 151_936;

  private final Path file;
  private final BufferedReader reader;
  private final int blockTokens;
  private TimedRequest next;
  private long lineNumber;
  private long firstTimestamp = Long.MIN_VALUE;

  private MooncakeTrace(Path file, BufferedReader reader, int blockTokens) {
    this.file = file;
    this.reader = reader;
    this.blockTokens = blockTokens;
  }

  static MooncakeTrace open(Path file, int blockTokens) throws IOException {
    if (blockTokens < 1) {
      throw new IllegalArgumentException("blockTokens must be >= 1, got " + blockTokens);
    }
    return new MooncakeTrace(
        file, Files.newBufferedReader(file, StandardCharsets.UTF_8), blockTokens);
  }

  @Override
  public boolean hasNext() {
    if (next == null) {
      next = read();
    }
    return next != null;
  }

  @Override
  public TimedRequest next() {
    if (!hasNext()) {
      throw new NoSuchElementException("trace " + file + " has no more requests");
    }
    TimedRequest out = next;
    next = null;
    return out;
  }

  private TimedRequest read() {
    try {
      String line;
      while ((line = reader.readLine()) != null) {
        lineNumber++;
        if (!line.isBlank()) {
          return parse(line);
        }
      }
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read trace " + file, e);
    }
  }

  private TimedRequest parse(String line) {
    try {
      JsonNode node = JSON.readTree(line);
      long timestamp = field(node, "timestamp").asLong();
      int input = (int) field(node, "input_length").asLong();
      int output = (int) field(node, "output_length").asLong();
      JsonNode ids = field(node, "hash_ids");
      if (!ids.isArray() || input < 1) {
        throw new IllegalArgumentException("hash_ids must be an array and input_length at least 1");
      }
      if (firstTimestamp == Long.MIN_VALUE) {
        firstTimestamp = timestamp;
      }
      long[] hashIds = new long[ids.size()];
      for (int i = 0; i < hashIds.length; i++) {
        hashIds[i] = ids.get(i).asLong();
      }
      int[] prompt = promptTokens(hashIds, input, blockTokens, lineNumber);
      int[] out = uniqueTokens(~lineNumber, Math.max(1, output));
      return new TimedRequest(
          Duration.ofMillis(Math.max(0, timestamp - firstTimestamp)),
          null,
          InferenceRequest.of(prompt, out));
    } catch (IOException | IllegalArgumentException e) {
      throw new TraceFormatException(
          "trace "
              + file
              + " line "
              + lineNumber
              + " is not a Mooncake record {timestamp, input_length, output_length, hash_ids}: "
              + e.getMessage(),
          e);
    }
  }

  private static JsonNode field(JsonNode node, String name) {
    JsonNode value = node.get(name);
    if (value == null || !(value.isNumber() || value.isArray())) {
      throw new IllegalArgumentException("missing or non-numeric field " + name);
    }
    return value;
  }

  /** The prompt: the expansions of {@code hashIds}, cut or padded (uniquely) to {@code input}. */
  static int[] promptTokens(long[] hashIds, int input, int blockTokens, long requestKey) {
    int[] prompt = new int[input];
    int filled = 0;
    for (int i = 0; i < hashIds.length && filled < input; i++) {
      for (int t = 0; t < blockTokens && filled < input; t++) {
        prompt[filled++] = token(hashIds[i], t);
      }
    }
    for (int t = 0; filled < input; t++) {
      prompt[filled++] = token(requestKey ^ 0x5DEECE66DL << 20, t);
    }
    return prompt;
  }

  static int[] uniqueTokens(long key, int count) {
    int[] out = new int[count];
    for (int t = 0; t < count; t++) {
      out[t] = token(key * 31 + 7, t);
    }
    return out;
  }

  /** Token {@code index} of the run derived from {@code key} (SplitMix64). */
  static int token(long key, int index) {
    long z = key * 0x9E3779B97F4A7C15L + index * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z = z ^ (z >>> 31);
    return (int) Math.floorMod(z, (long) VOCABULARY);
  }

  @Override
  public void close() {
    try {
      reader.close();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot close trace " + file, e);
    }
  }
}
