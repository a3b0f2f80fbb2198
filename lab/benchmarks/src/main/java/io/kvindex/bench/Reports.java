package io.kvindex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/** JSON result objects: the common header (when, where, how big) and writing. Thread-safe. */
final class Reports {
  static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Reports() {}

  /** A result object with the benchmark's name, the time, the quick flag and the machine. */
  static ObjectNode header(String benchmark, BenchOptions options) {
    ObjectNode json = MAPPER.createObjectNode();
    json.put("benchmark", benchmark);
    json.put("timestamp", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    json.put("quick", options.quick());
    ObjectNode machine = json.putObject("machine");
    machine.put("cores", Runtime.getRuntime().availableProcessors());
    machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.arch"));
    machine.put("java", Runtime.version().toString());
    machine.put("load_average_at_start", loadAverage());
    return json;
  }

  /** Adds the closing load average and the run's wall time. */
  static void finish(ObjectNode json, long startNanos) {
    ObjectNode machine = (ObjectNode) json.get("machine");
    machine.put("load_average_at_end", loadAverage());
    json.put("wall_time_s", LatencyRecorder.roundTenth((System.nanoTime() - startNanos) / 1e9));
  }

  /** The 1-minute system load average (negative where the platform has none). */
  static double loadAverage() {
    return LatencyRecorder.roundTenth(
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
  }

  static double perSecond(long count, long nanos) {
    return Math.round(count / (nanos / 1e9));
  }

  /** The object under {@code name} in {@code parent}, added empty if absent. */
  static ObjectNode child(ObjectNode parent, String name) {
    JsonNode node = parent.get(name);
    return node instanceof ObjectNode object ? object : parent.putObject(name);
  }

  /** Writes the object as indented JSON, creating parent directories. */
  static void write(Path file, JsonNode json) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.writeString(file, MAPPER.writeValueAsString(json) + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }
}
