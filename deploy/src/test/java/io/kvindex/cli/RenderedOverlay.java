package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

/**
 * One overlay of deploy/kubernetes as {@code kubectl kustomize} renders it: its objects by kind and
 * name, and what its kvindex containers say, read with the services' real command specs. Immutable
 * once rendered; thread-safe.
 */
final class RenderedOverlay {
  static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Pattern SETTING_ENV = Pattern.compile("; (KVINDEX_[A-Z0-9_]+)\\)$");

  final String name;
  private final List<JsonNode> docs;

  private RenderedOverlay(String name, List<JsonNode> docs) {
    this.name = name;
    this.docs = List.copyOf(docs);
  }

  /** Every rendered object. */
  List<JsonNode> all() {
    return docs;
  }

  /** A Deployment's pod template. */
  JsonNode template(String deployment) {
    return object("Deployment", deployment).path("spec").path("template");
  }

  /** Renders an overlay directory with {@code kubectl kustomize}. */
  static RenderedOverlay render(Path dir) throws Exception {
    Path err = Files.createTempFile("kustomize", ".err");
    try {
      Process p =
          new ProcessBuilder("kubectl", "kustomize", dir.toString())
              .redirectError(err.toFile())
              .start();
      byte[] out = p.getInputStream().readAllBytes();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("kubectl kustomize " + dir).isTrue();
      String errors = Files.readString(err);
      assertThat(p.exitValue()).as("kubectl kustomize " + dir + ":\n" + errors).isZero();
      List<JsonNode> docs = new ArrayList<>();
      try (var values =
          YAML.readerFor(JsonNode.class).readValues(new String(out, StandardCharsets.UTF_8))) {
        while (values.hasNext()) {
          JsonNode doc = (JsonNode) values.next();
          if (doc != null && doc.has("kind")) {
            docs.add(doc);
          }
        }
      }
      return new RenderedOverlay(dir.getFileName().toString(), docs);
    } finally {
      Files.deleteIfExists(err);
    }
  }

  /** Every object of a kind. */
  List<JsonNode> kind(String kind) {
    return docs.stream().filter(d -> d.path("kind").asText().equals(kind)).toList();
  }

  /** The object of a kind and name; fails the test when there is none. */
  JsonNode object(String kind, String name) {
    return kind(kind).stream()
        .filter(d -> d.path("metadata").path("name").asText().equals(name))
        .findFirst()
        .orElseGet(() -> fail(name + " renders no " + kind + " " + name));
  }

  /** A Deployment's first container. */
  JsonNode container(String deployment) {
    return object("Deployment", deployment)
        .path("spec")
        .path("template")
        .path("spec")
        .path("containers")
        .get(0);
  }

  static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  static Map<String, String> map(JsonNode object) {
    Map<String, String> out = new TreeMap<>();
    object.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
    return out;
  }

  /** Whether a selector's labels are all among {@code labels}. */
  static boolean selects(JsonNode matchLabels, JsonNode labels) {
    return !matchLabels.isEmpty()
        && map(labels).entrySet().containsAll(map(matchLabels).entrySet());
  }

  /** The container port a probe's or Service's port (a number or a port name) reaches. */
  static int port(JsonNode container, JsonNode port) {
    if (port.isInt()) {
      return port.asInt();
    }
    for (JsonNode p : container.path("ports")) {
      if (p.path("name").asText().equals(port.asText())) {
        return p.path("containerPort").asInt();
      }
    }
    return fail(container.path("name").asText() + " has no port named " + port.asText());
  }

  /** Parses a container's args as {@code scripts/kvindex <args>} would, without running. */
  static ParseResult parse(String where, JsonNode container) {
    List<String> args = texts(container.path("args"));
    try {
      ParseResult result = Main.commandLine().parseArgs(args.toArray(String[]::new));
      assertThat(result.hasSubcommand()).as(where + " runs a kvindex subcommand").isTrue();
      return result.subcommand();
    } catch (CommandLine.ParameterException e) {
      return fail(where + ": '" + String.join(" ", args) + "' does not parse: " + e.getMessage());
    }
  }

  /** The environment variables a subcommand's settings read, from its real command spec. */
  static Set<String> settingsEnv(CommandSpec spec) {
    Set<String> out = new TreeSet<>();
    for (OptionSpec o : spec.options()) {
      Matcher m = SETTING_ENV.matcher(String.join(" ", o.description()));
      if (m.find()) {
        out.add(m.group(1));
      }
    }
    return out;
  }

  /** A container's environment: its env values and its envFrom ConfigMaps' data. */
  Map<String, JsonNode> env(JsonNode container) {
    Map<String, JsonNode> out = new LinkedHashMap<>();
    for (JsonNode from : container.path("envFrom")) {
      String name = from.path("configMapRef").path("name").asText();
      assertThat(name).as("envFrom names a ConfigMap").isNotEmpty();
      object("ConfigMap", name)
          .path("data")
          .properties()
          .forEach(e -> out.put(e.getKey(), e.getValue()));
    }
    container.path("env").forEach(e -> out.put(e.path("name").asText(), e));
    return out;
  }

  /** A setting as the service resolves it: its flag, else its variable, else its default. */
  String setting(JsonNode container, String flag, String fallback) {
    ParseResult parsed = parse(name, container);
    if (parsed.hasMatchedOption(flag)) {
      return parsed.matchedOption(flag).stringValues().get(0);
    }
    String var = "KVINDEX_" + flag.substring(2).toUpperCase(Locale.ROOT).replace('-', '_');
    JsonNode v = env(container).get(var);
    if (v == null) {
      return fallback;
    }
    if (v.isTextual()) {
      return v.asText();
    }
    JsonNode secret = v.path("valueFrom").path("secretKeyRef");
    return secret.isMissingNode()
        ? v.path("value").asText()
        : "secret " + secret.path("name").asText() + "/" + secret.path("key").asText();
  }
}
