package io.kvindex.ingester.discovery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses pods given on the command line or in {@code KVINDEX_PODS}: whitespace-separated specs,
 * each {@code name=..,model=..,endpoint=..[,replay=..][,metrics=..][,ranks=0;1]
 * [,key-mode=engine|token][,bind=true][,topic=..]}. Thread-safe (stateless).
 */
public final class StaticPods {
  private static final Set<String> KEYS =
      Set.of(
          "name", "model", "endpoint", "replay", "metrics", "ranks", "key-mode", "bind", "topic");

  private StaticPods() {}

  /** The pods of a whitespace-separated list of specs. */
  public static List<PodSpec> parse(String text) {
    List<PodSpec> out = new ArrayList<>();
    for (String spec : text.trim().split("\\s+")) {
      if (!spec.isEmpty()) {
        out.add(parseOne(spec));
      }
    }
    return out;
  }

  static PodSpec parseOne(String spec) {
    Map<String, String> f = new HashMap<>();
    for (String part : spec.split(",")) {
      int eq = part.indexOf('=');
      String key = eq < 0 ? part : part.substring(0, eq);
      if (eq < 0 || !KEYS.contains(key)) {
        throw new IllegalArgumentException(
            "pod spec '" + spec + "': '" + part + "' is not one of key=value with key in " + KEYS);
      }
      f.put(key, part.substring(eq + 1));
    }
    for (String required : List.of("name", "model", "endpoint")) {
      if (!f.containsKey(required)) {
        throw new IllegalArgumentException("pod spec '" + spec + "' needs " + required + "=...");
      }
    }
    List<Integer> ranks = new ArrayList<>();
    if (f.containsKey("ranks")) {
      for (String r : f.get("ranks").split(";")) {
        try {
          ranks.add(Integer.parseInt(r.trim()));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "pod spec '" + spec + "': ranks must be integers separated by ';', got " + r, e);
        }
      }
    }
    return new PodSpec(
        f.get("name"),
        f.get("model"),
        f.get("endpoint"),
        Boolean.parseBoolean(f.getOrDefault("bind", "false")),
        f.get("replay"),
        f.get("metrics"),
        ranks,
        PodSpec.keyMode(f.get("key-mode")),
        f.get("topic"));
  }
}
