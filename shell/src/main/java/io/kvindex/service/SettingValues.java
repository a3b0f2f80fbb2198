package io.kvindex.service;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvindex.common.Check;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * What each setting of a service resolves to: its flags if any were given, else its environment
 * variable, else its key in the {@code --config} file (YAML or JSON, a map of key to value or, for
 * a repeatable setting, to a list), else its default. Immutable and thread-safe.
 */
public final class SettingValues {
  /** Where a value came from. */
  public enum Source {
    FLAG,
    ENVIRONMENT,
    FILE,
    DEFAULT
  }

  private record Resolved(List<String> values, Source source) {}

  private final Map<Setting, Resolved> values;

  private SettingValues(Map<Setting, Resolved> values) {
    this.values = values;
  }

  /**
   * Resolves every setting.
   *
   * @param flags the values given on the command line, per setting (absent when none)
   * @param env the environment
   * @param file the {@code --config} file, or null
   * @throws IllegalArgumentException if the file is not a map, or names a setting there is not
   * @throws IOException if the file cannot be read or parsed
   */
  public static SettingValues resolve(
      List<Setting> settings, Map<Setting, List<String>> flags, Map<String, String> env, Path file)
      throws IOException {
    JsonNode doc = readFile(settings, file);
    Map<Setting, Resolved> out = new LinkedHashMap<>();
    for (Setting s : settings) {
      out.put(s, resolve(s, flags.get(s), env.get(s.env()), doc == null ? null : doc.get(s.key())));
    }
    return new SettingValues(out);
  }

  private static Resolved resolve(
      Setting s, List<String> fromFlags, String fromEnv, JsonNode fromFile) {
    if (fromFlags != null && !fromFlags.isEmpty()) {
      return new Resolved(List.copyOf(fromFlags), Source.FLAG);
    }
    if (fromEnv != null && !fromEnv.isBlank()) {
      List<String> split = new ArrayList<>();
      for (String v : s.isRepeatable() ? fromEnv.split(s.envSeparator()) : new String[] {fromEnv}) {
        if (!v.isBlank()) {
          split.add(v.trim());
        }
      }
      return new Resolved(split, Source.ENVIRONMENT);
    }
    if (fromFile != null && !fromFile.isNull()) {
      List<String> listed = new ArrayList<>();
      if (fromFile.isArray()) {
        fromFile.forEach(v -> listed.add(v.asText()));
      } else {
        listed.add(fromFile.asText());
      }
      return new Resolved(listed, Source.FILE);
    }
    return new Resolved(
        s.defaultValue() == null ? List.of() : List.of(s.defaultValue()), Source.DEFAULT);
  }

  private static JsonNode readFile(List<Setting> settings, Path file) throws IOException {
    if (file == null) {
      return null;
    }
    JsonNode doc = new ObjectMapper(new YAMLFactory()).readTree(file.toFile());
    if (doc == null || doc.isNull() || doc.isMissingNode()) {
      return null;
    }
    if (!doc.isObject()) {
      throw new IllegalArgumentException(
          "--config " + file + " must hold a map of setting: value; see --help for the settings");
    }
    TreeSet<String> known = new TreeSet<>();
    settings.forEach(s -> known.add(s.key()));
    for (Iterator<String> it = doc.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key)) {
        throw new IllegalArgumentException(
            "--config " + file + ": unknown setting '" + key + "'; known: " + known);
      }
    }
    return doc;
  }

  /** The setting's value, or null when it has none (no default, nothing given). */
  public String value(Setting s) {
    List<String> v = values(s);
    return v.isEmpty() ? null : v.get(v.size() - 1);
  }

  /** Every value of a (repeatable) setting, in order. */
  public List<String> values(Setting s) {
    return Check.notNull(values.get(s), "values of " + s.key()).values();
  }

  /** Where the setting's value came from. */
  public Source source(Setting s) {
    return values.get(s).source();
  }

  /**
   * Applies each setting's values with {@code apply}; a value it refuses is reported with the
   * setting's names and where the value came from.
   *
   * @throws IllegalArgumentException naming the setting
   */
  public void apply(Setting s, java.util.function.Consumer<String> apply) {
    for (String v : values(s)) {
      try {
        apply.accept(v);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(
            "setting "
                + s.describe()
                + " from the "
                + source(s).name().toLowerCase(java.util.Locale.ROOT)
                + ": "
                + e.getMessage(),
            e);
      }
    }
  }
}
