package io.kvindex.service;

import io.kvindex.common.Check;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

/**
 * Puts a service's {@link Setting}s on its picocli command, so that each setting's flag, help line
 * and default come from its one declaration, and reads them back through {@link SettingValues}
 * (flag, else environment, else {@code --config} file, else default). Thread-safe (stateless).
 */
public final class SettingOptions {
  /** The option naming the settings file. */
  public static final String CONFIG = "--config";

  private SettingOptions() {}

  /**
   * Adds {@code --config} and an option per setting to {@code spec} (a model transformer's job).
   */
  public static CommandSpec addTo(CommandSpec spec, List<Setting> settings) {
    spec.addOption(
        OptionSpec.builder(CONFIG)
            .paramLabel("FILE")
            .type(Path.class)
            .description("YAML or JSON file of settings, keyed by setting name")
            .build());
    for (Setting s : settings) {
      OptionSpec.Builder option =
          OptionSpec.builder(s.flags().toArray(String[]::new))
              .paramLabel(s.label())
              .description(s.description() + " (default: " + s.defaultDoc() + "; " + s.env() + ")");
      if (s.isRepeatable()) {
        option.type(List.class).auxiliaryTypes(String.class);
      } else {
        option.type(String.class);
      }
      spec.addOption(option.build());
    }
    return spec;
  }

  /**
   * The settings' values for the parsed command line.
   *
   * @throws IllegalArgumentException for an unknown setting in the file
   * @throws IOException if the file cannot be read
   */
  public static SettingValues values(
      CommandSpec spec, List<Setting> settings, Map<String, String> env) throws IOException {
    ParseResult parsed = Check.notNull(spec.commandLine(), "command line").getParseResult();
    Map<Setting, List<String>> flags = new HashMap<>();
    for (Setting s : settings) {
      if (parsed.hasMatchedOption(s.flag())) {
        flags.put(s, parsed.matchedOption(s.flag()).stringValues());
      }
    }
    Path file = parsed.hasMatchedOption(CONFIG) ? parsed.matchedOptionValue(CONFIG, null) : null;
    return SettingValues.resolve(settings, flags, env, file);
  }
}
