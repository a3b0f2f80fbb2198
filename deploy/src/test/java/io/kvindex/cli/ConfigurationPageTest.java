package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.lab.LabMain;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Keeps docs/configuration.md in step with the commands: each {@code ## ... (`kvindex <command>`)}
 * section's table lists exactly the command's options (a command with subcommands, such as {@code
 * bench}, the union of theirs), each with the default the command declares. A setting's default is
 * read from its one declaration, as {@code --help} shows it: the {@code (default: ...)} of the
 * option's description, else picocli's default value. {@code --help}, {@code --version} and {@code
 * --config} are described once on the page, not per command.
 */
class ConfigurationPageTest {
  private static final Pattern SECTION = Pattern.compile("^## .*\\(`kvindex ([a-z ]+)`\\)$");
  private static final Pattern FLAG = Pattern.compile("--[a-z][a-z0-9-]*");
  private static final Pattern DESCRIBED_DEFAULT =
      Pattern.compile("Default: (.*?)(?:\\.\\s|\\.?$)");

  /** Per command, its rows: flag → the default column, as written. */
  private static final Map<String, Map<String, String>> documented = new LinkedHashMap<>();

  @BeforeAll
  static void read() throws IOException {
    Path page = repositoryRoot().resolve("docs").resolve("configuration.md");
    String command = null;
    for (String line : Files.readAllLines(page)) {
      if (line.startsWith("## ")) {
        Matcher section = SECTION.matcher(line);
        command = section.matches() ? section.group(1) : null;
        if (command != null) {
          assertThat(documented)
              .as("one section for 'kvindex %s'", command)
              .doesNotContainKey(command);
          documented.put(command, new LinkedHashMap<>());
        }
      } else if (command != null && line.startsWith("| `-")) {
        List<String> cells = cells(line);
        Matcher flag = FLAG.matcher(cells.get(0));
        assertThat(flag.find()).as("a flag in '%s'", line).isTrue();
        String previous = documented.get(command).put(flag.group(), cells.get(1));
        assertThat(previous).as("%s listed twice for 'kvindex %s'", flag.group(), command).isNull();
      }
    }
  }

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("docs"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("docs/ above " + Path.of("").toAbsolutePath()).isNotNull();
    return dir;
  }

  /** A table row's cells, split on the pipes that are not escaped. */
  private static List<String> cells(String row) {
    List<String> cells = new ArrayList<>();
    for (String cell : row.substring(1, row.lastIndexOf('|')).split("(?<!\\\\)\\|")) {
      cells.add(cell.replace("\\|", "|").trim());
    }
    return cells;
  }

  /** The command's options by their longest name, subcommands' merged in (the first one wins). */
  private static Map<String, OptionSpec> options(CommandLine command) {
    Map<String, OptionSpec> options = new LinkedHashMap<>();
    for (OptionSpec option : command.getCommandSpec().options()) {
      if (!option.usageHelp()
          && !option.versionHelp()
          && !option.longestName().equals("--config")) {
        options.put(option.longestName(), option);
      }
    }
    command.getSubcommands().values().forEach(sub -> options(sub).forEach(options::putIfAbsent));
    return options;
  }

  /** The default as its declaration states it, or null when it states none. */
  static String declaredDefault(OptionSpec option) {
    String description = String.join(" ", option.description());
    int at = description.lastIndexOf("(default: ");
    if (at >= 0) {
      String rest = description.substring(at + "(default: ".length());
      int env = rest.lastIndexOf("; KVINDEX_");
      return env >= 0 ? rest.substring(0, env) : upToClosingParenthesis(rest);
    }
    Matcher described = DESCRIBED_DEFAULT.matcher(description);
    if (described.find()) {
      return described.group(1);
    }
    return option.defaultValue();
  }

  private static String upToClosingParenthesis(String text) {
    int depth = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '(') {
        depth++;
      } else if (c == ')' && depth-- == 0 || c == ';' && depth == 0) {
        return text.substring(0, i);
      }
    }
    return text;
  }

  /** Every command with options, as the page names it: {@code ingester}, {@code bench}, ... */
  private static Map<String, Map<String, OptionSpec>> commands() {
    Map<String, Map<String, OptionSpec>> commands = new LinkedHashMap<>();
    LabMain.commandLine()
        .getSubcommands()
        .forEach(
            (name, command) -> {
              Map<String, OptionSpec> options = options(command);
              if (!options.isEmpty() && !name.equals("help")) {
                commands.put(name, options);
              }
            });
    return commands;
  }

  @Test
  void everyCommand_hasItsSection() {
    assertThat(documented.keySet())
        .as("sections '## ... (`kvindex <command>`)' in docs/configuration.md")
        .containsExactlyInAnyOrderElementsOf(commands().keySet());
  }

  @Test
  void everySetting_isDocumented_andNoneThatDoesNotExist() {
    List<String> wrong = new ArrayList<>();
    commands()
        .forEach(
            (command, options) -> {
              Map<String, String> rows = documented.getOrDefault(command, Map.of());
              options.keySet().stream()
                  .filter(flag -> !rows.containsKey(flag))
                  .forEach(
                      flag -> wrong.add("kvindex " + command + " " + flag + ": not documented"));
              rows.keySet().stream()
                  .filter(flag -> !options.containsKey(flag))
                  .forEach(
                      flag -> wrong.add("kvindex " + command + " " + flag + ": no such option"));
            });
    assertThat(wrong).as("docs/configuration.md against the commands").isEmpty();
  }

  @Test
  void everyDefault_isTheDeclaredOne() {
    List<String> wrong = new ArrayList<>();
    commands()
        .forEach(
            (command, options) ->
                options.forEach(
                    (flag, option) -> {
                      String row = documented.getOrDefault(command, Map.of()).get(flag);
                      if (row == null) {
                        return;
                      }
                      String shown = row.replace("`", "").trim();
                      String declared = declaredDefault(option);
                      if (shown.isEmpty()) {
                        wrong.add("kvindex " + command + " " + flag + ": no default documented");
                      } else if (declared != null && !shown.startsWith(declared.trim())) {
                        wrong.add(
                            "kvindex "
                                + command
                                + " "
                                + flag
                                + ": documented default '"
                                + shown
                                + "', declared '"
                                + declared
                                + "'");
                      }
                    }));
    assertThat(wrong).as("defaults in docs/configuration.md").isEmpty();
  }
}
