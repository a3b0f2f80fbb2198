package io.kvindex.inspect;

import static io.kvindex.inspect.StoredText.latin1;
import static io.kvindex.inspect.StoredText.latin1Bytes;
import static io.kvindex.inspect.StoredText.lengthPrefixed;

import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.redis.HashFields;
import io.kvindex.inspect.IndexReport.ModelKeys;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What writers and readers noted about the models they key (their key modes, the readers' keys, the
 * key checks), and the problem a mismatch makes. Pure: fed what the index holds. Not thread-safe:
 * one read fills it.
 */
final class ModelNotes {
  private final Map<String, Set<String>> writerModes = new TreeMap<>();
  private final Map<String, Set<String>> readerKeys = new TreeMap<>();
  private final Set<String> models = new TreeSet<>();
  private final Set<Integer> segmentSlots = new TreeSet<>();
  private final Map<String, KeyCheckNote> keyChecks = new TreeMap<>();

  /** A model some pod is indexed under. */
  void model(String model) {
    models.add(model);
  }

  /** The segment sizes (slots) writers noted, ascending. */
  List<Integer> segmentSlots() {
    return new ArrayList<>(segmentSlots);
  }

  void keyChecks(Map<byte[], byte[]> notes) {
    notes.forEach(
        (field, value) -> {
          try {
            String model = new String(field, StandardCharsets.UTF_8);
            keyChecks.put(model, KeyCheckNote.decode(value));
            models.add(model);
          } catch (IllegalArgumentException e) {
            // a note of another release: not shown
          }
        });
  }

  void writers(Map<String, byte[]> meta) {
    for (String field : meta.keySet()) {
      if (field.startsWith(HashFields.NOTE + "mode:")) {
        String rest = field.substring((HashFields.NOTE + "mode:").length());
        int colon = rest.indexOf(':');
        String model = lengthPrefixed(latin1Bytes(rest.substring(colon + 1)), 0);
        writerModes.computeIfAbsent(model, m -> new TreeSet<>()).add(rest.substring(0, colon));
        models.add(model);
      } else if (field.startsWith(HashFields.NOTE + "segment-slots:")) {
        segmentSlots.add(
            Integer.valueOf(field.substring((HashFields.NOTE + "segment-slots:").length())));
      }
    }
  }

  void readers(Map<byte[], byte[]> notes) {
    byte[] prefix = (HashFields.NOTE + "keys:").getBytes(StandardCharsets.US_ASCII);
    for (byte[] field : notes.keySet()) {
      if (field.length < prefix.length || !latin1(field).startsWith(latin1(prefix))) {
        continue;
      }
      String keys = lengthPrefixed(field, prefix.length);
      int at = prefix.length + 4 + keys.getBytes(StandardCharsets.UTF_8).length;
      String model = lengthPrefixed(field, at);
      readerKeys.computeIfAbsent(model, m -> new TreeSet<>()).add(keys);
      if (!model.isEmpty()) {
        models.add(model);
      }
    }
  }

  List<ModelKeys> models(String only) {
    List<ModelKeys> out = new ArrayList<>();
    Set<String> defaults = readerKeys.getOrDefault("", Set.of());
    for (String model : models) {
      if (only != null && !only.equals(model)) {
        continue;
      }
      Set<String> modes = writerModes.getOrDefault(model, Set.of());
      Set<String> keys = new TreeSet<>(readerKeys.getOrDefault(model, Set.of()));
      if (keys.isEmpty()) {
        defaults.forEach(d -> keys.add(d + " (default keys)"));
      }
      out.add(
          new ModelKeys(
              model,
              List.copyOf(modes),
              List.copyOf(keys),
              problem(modes, keys),
              keyChecks.get(model)));
    }
    return out;
  }

  private static String problem(Set<String> modes, Set<String> keys) {
    if (modes.size() > 1) {
      return "writers apply it in both key modes: give every ingester the same"
          + " --key-mode for it";
    }
    for (String k : keys) {
      String mode = k.substring(0, k.indexOf(':'));
      if (!modes.isEmpty() && !modes.contains(mode)) {
        return "a router keys it as "
            + mode
            + " but writers apply it as "
            + modes.iterator().next()
            + ": no lookup can match; give the router --model with the writers' mode";
      }
    }
    if (keys.stream().map(k -> k.substring(0, k.indexOf(':'))).distinct().count() > 1) {
      return "routers key it in different modes: give every router the same --model";
    }
    return null;
  }
}
