package io.kvindex.ingester.discovery;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pods from a YAML or JSON file, reloaded when its modification time or size changes. A file that
 * fails to parse keeps the last good list (logged); a missing file means no pods. Thread-safe.
 *
 * <pre>
 * pods:
 *   - name: pod-a                              # required, unique
 *     model: meta-llama/Llama-3.1-8B           # required
 *     endpoint: tcp://10.0.0.7:5557            # publisher endpoint (rank 0)
 *     bind: false                              # true: the publisher connects out, we bind endpoint
 *     replayEndpoint: tcp://10.0.0.7:5600      # optional
 *     metricsUrl: http://10.0.0.7:8000/metrics # optional
 *     dpRanks: [0, 1]                          # optional, default [0]
 *     keyMode: engine                          # engine | token, default engine
 *     topic: ""                                # optional
 * </pre>
 */
final class FileDiscovery implements PodDiscovery {
  private static final Logger log = LoggerFactory.getLogger(FileDiscovery.class);
  private static final ObjectMapper MAPPER =
      new ObjectMapper(new YAMLFactory())
          .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, true);

  private final Path path;
  private Object stamp;
  private List<PodSpec> pods = List.of();

  FileDiscovery(Path path) {
    this.path = path;
  }

  @Override
  public synchronized List<PodSpec> pods() {
    Object now = stamp();
    if (now == null) {
      pods = List.of();
      stamp = null;
    } else if (!now.equals(stamp)) {
      try {
        pods = parse(Files.readAllBytes(path));
        stamp = now;
        log.info("discovery: loaded {} pods from {}", pods.size(), path);
      } catch (IOException | RuntimeException e) {
        log.error(
            "discovery: cannot use {} ({}); keeping the previous {} pods", path, e, pods.size());
        stamp = now;
      }
    }
    return pods;
  }

  private Object stamp() {
    try {
      BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
      return List.of(a.lastModifiedTime(), a.size(), a.fileKey() == null ? "" : a.fileKey());
    } catch (IOException e) {
      return null;
    }
  }

  /** Parses a discovery document. */
  static List<PodSpec> parse(byte[] doc) throws IOException {
    File f = MAPPER.readValue(doc, File.class);
    List<PodSpec> out = new ArrayList<>();
    if (f == null || f.pods == null) {
      return out;
    }
    for (Entry e : f.pods) {
      out.add(
          new PodSpec(
              e.name,
              e.model,
              e.endpoint,
              e.bind,
              e.replayEndpoint,
              e.metricsUrl,
              e.dpRanks,
              PodSpec.keyMode(e.keyMode),
              e.topic));
    }
    return out;
  }

  @JsonIgnoreProperties(ignoreUnknown = false)
  static final class File {
    @JsonProperty List<Entry> pods;
  }

  static final class Entry {
    @JsonProperty String name;
    @JsonProperty String model;
    @JsonProperty String endpoint;
    @JsonProperty boolean bind;
    @JsonProperty String replayEndpoint;
    @JsonProperty String metricsUrl;
    @JsonProperty List<Integer> dpRanks;
    @JsonProperty String keyMode;
    @JsonProperty String topic;
  }
}
