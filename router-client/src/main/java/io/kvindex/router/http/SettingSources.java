package io.kvindex.router.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The settings of a command that were not given as flags, from the environment ({@code
 * KVINDEX_<FLAG>}) or else a YAML/JSON file keyed by flag name, turned into extra flags.
 * Thread-safe (stateless).
 */
final class SettingSources {
  private SettingSources() {}

  /**
   * Extra command-line arguments for every option the command line did not set.
   *
   * @throws IllegalArgumentException if the file names a setting the command does not have
   * @throws IOException if the file cannot be read or parsed
   */
  static List<String> args(CommandSpec spec, Map<String, String> env, Path file)
      throws IOException {
    JsonNode settings =
        file == null ? null : new ObjectMapper(new YAMLFactory()).readTree(file.toFile());
    if (settings != null && !settings.isNull() && !settings.isObject()) {
      throw new IllegalArgumentException("--config " + file + " must hold a map of settings");
    }
    checkKeys(spec, settings, file);
    List<String> out = new ArrayList<>();
    for (OptionSpec option : spec.options()) {
      String flag = option.longestName();
      if (option.usageHelp()
          || option.versionHelp()
          || flag.equals("--config")
          || spec.commandLine().getParseResult().hasMatchedOption(option)) {
        continue;
      }
      for (String value : values(option, flag.substring(2), env, settings)) {
        out.add(flag);
        out.add(value);
      }
    }
    return out;
  }

  /**
   * The environment variable of a flag: {@code --lookup-budget} is {@code KVINDEX_LOOKUP_BUDGET}.
   */
  static String envName(String key) {
    return "KVINDEX_" + key.toUpperCase(Locale.ROOT).replace('-', '_');
  }

  private static List<String> values(
      OptionSpec option, String key, Map<String, String> env, JsonNode settings) {
    String fromEnv = env.get(envName(key));
    List<String> out = new ArrayList<>();
    if (fromEnv != null) {
      if (option.isMultiValue()) {
        for (String v : fromEnv.split(",")) {
          if (!v.isBlank()) {
            out.add(v.trim());
          }
        }
      } else {
        out.add(fromEnv);
      }
      return out;
    }
    JsonNode value = settings == null ? null : settings.get(key);
    if (value == null || value.isNull()) {
      return out;
    }
    if (value.isArray()) {
      value.forEach(v -> out.add(v.asText()));
    } else {
      out.add(value.asText());
    }
    return out;
  }

  private static void checkKeys(CommandSpec spec, JsonNode settings, Path file) {
    if (settings == null || settings.isNull()) {
      return;
    }
    TreeSet<String> known = new TreeSet<>();
    spec.options().forEach(o -> known.add(o.longestName().substring(2)));
    for (Iterator<String> it = settings.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key) || key.equals("config") || key.equals("help")) {
        throw new IllegalArgumentException(
            "--config " + file + ": unknown setting '" + key + "'; known: " + known);
      }
    }
  }
}
