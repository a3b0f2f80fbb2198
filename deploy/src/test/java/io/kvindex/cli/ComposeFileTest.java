package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.lab.LabMain;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.ParseResult;

/**
 * Validates docker-compose.yml without a Docker engine: it parses, what it builds exists, every
 * kvindex command line parses with the real command spec (without running), and the services agree
 * on hosts, ports, the index and the hashing of the model.
 */
class ComposeFileTest {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Set<String> KVINDEX_COMMANDS = Set.of("sim", "ingester", "router");
  private static final Set<String> LAB_COMMANDS = Set.of("sim", "demo", "chaos", "bench");

  private static Path root;
  private static JsonNode compose;
  private static JsonNode services;
  private static final Map<String, ParseResult> parsed = new LinkedHashMap<>();

  @BeforeAll
  static void load() throws IOException {
    root = repositoryRoot();
    compose = YAML.readTree(root.resolve("docker-compose.yml").toFile());
    services = compose.path("services");
    for (Map.Entry<String, JsonNode> e : services.properties()) {
      if (e.getValue().has("build")) {
        parsed.put(e.getKey(), parse(e.getKey(), command(e.getValue())));
      }
    }
  }

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("docker-compose.yml"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("docker-compose.yml above " + Path.of("").toAbsolutePath()).isNotNull();
    return dir;
  }

  private static List<String> command(JsonNode service) {
    List<String> args = new ArrayList<>();
    service.path("command").forEach(n -> args.add(n.asText()));
    return args;
  }

  /** Parses like {@code scripts/kvindex <args>} would, without running the command. */
  private static ParseResult parse(String service, List<String> args) {
    try {
      ParseResult result = LabMain.commandLine().parseArgs(args.toArray(String[]::new));
      assertThat(result.hasSubcommand()).as(service + " runs a kvindex subcommand").isTrue();
      return result.subcommand();
    } catch (CommandLine.ParameterException e) {
      return fail(service + ": '" + String.join(" ", args) + "' does not parse: " + e.getMessage());
    }
  }

  private static String option(String service, String name) {
    ParseResult result = parsed.get(service);
    assertThat(result.hasMatchedOption(name)).as(service + " sets " + name).isTrue();
    return result.matchedOptionValue(name, (Object) null).toString();
  }

  private static List<String> servicesRunning(String subcommand) {
    List<String> out = new ArrayList<>();
    parsed.forEach(
        (name, result) -> {
          if (result.commandSpec().name().equals(subcommand)) {
            out.add(name);
          }
        });
    return out;
  }

  @Test
  void services_theWholeStack() {
    assertThat(services.isObject()).isTrue();
    assertThat(servicesRunning("sim")).hasSize(1);
    assertThat(servicesRunning("ingester")).hasSize(2);
    assertThat(servicesRunning("router")).hasSize(2);
    assertThat(services.path("redis").path("image").asText()).isEqualTo("redis:7.0");
    assertThat(command(services.path("redis")))
        .containsSubsequence("--maxmemory-policy", "noeviction");
  }

  @Test
  void build_contextAndDockerfileExist_multiStage() throws IOException {
    for (String name : parsed.keySet()) {
      JsonNode build = services.path(name).path("build");
      Path context = root.resolve(build.path("context").asText(".")).normalize();
      Path dockerfile = context.resolve(build.path("dockerfile").asText("Dockerfile"));
      assertThat(context).as(name + " build context").isDirectory();
      assertThat(dockerfile).as(name + " Dockerfile").isRegularFile();
      String text = Files.readString(dockerfile);
      // The lab's commands come from the lab target; the services run the production image.
      String target = build.path("target").asText("");
      boolean lab = LAB_COMMANDS.contains(parsed.get(name).commandSpec().name());
      assertThat(target).as(name + " build target").isEqualTo(lab ? "lab" : "");
      if (lab) {
        assertThat(text).containsPattern("(?m)^FROM \\S+ AS lab$");
      }
      assertThat(text)
          .as(dockerfile.toString())
          .containsPattern("(?m)^FROM maven:\\S*temurin-17\\S* AS build")
          .containsPattern("(?m)^FROM eclipse-temurin:17-jre")
          .contains("KVINDEX_NO_BUILD=1")
          .containsPattern("(?m)^ENTRYPOINT \\[\"[^\"]*scripts/kvindex\"\\]");
    }
    assertThat(root.resolve(".dockerignore")).isRegularFile();
    // The dependency layer is built from every module's pom; a module left out breaks its cache.
    String dockerfile = Files.readString(root.resolve("Dockerfile"));
    java.util.regex.Matcher modules =
        java.util.regex.Pattern.compile("<module>([^<]+)</module>")
            .matcher(Files.readString(root.resolve("pom.xml")));
    while (modules.find()) {
      assertThat(dockerfile).contains("COPY " + modules.group(1) + "/pom.xml ");
    }
    assertThat(root.resolve("scripts/kvindex")).isRegularFile();
  }

  @Test
  void commands_areKvindexSubcommands() {
    assertThat(parsed).isNotEmpty();
    parsed.forEach(
        (name, result) ->
            assertThat(KVINDEX_COMMANDS).as(name).contains(result.commandSpec().name()));
  }

  @Test
  void redisUris_nameTheRedisServiceAndEachRolesAclUser() throws IOException {
    assertThat(command(services.path("redis")))
        .containsSubsequence("--aclfile", "/etc/redis/users.acl");
    List<String> users = Files.readAllLines(mountedSource("redis", "/etc/redis/users.acl"));
    Map<String, String> roles = Map.of("ingester", "kvindex-ingester", "router", "kvindex-router");
    Set<String> hosts = new HashSet<>();
    roles.forEach(
        (role, user) -> {
          assertThat(servicesRunning(role)).isNotEmpty();
          for (String service : servicesRunning(role)) {
            URI uri = URI.create(option(service, "--redis-uri"));
            hosts.add(uri.getHost() + ":" + uri.getPort());
            String[] login = uri.getUserInfo().split(":", 2);
            assertThat(login[0]).as(service + " logs in as its role's user").isEqualTo(user);
            assertThat(users)
                .as(service + "'s password is its user's in the ACL file")
                .anyMatch(l -> l.startsWith("user " + user + " on >" + login[1] + " "));
          }
        });
    assertThat(hosts).containsExactly("redis:6379");
    assertThat(services.path("redis").path("image").asText()).startsWith("redis:");
    assertThat(texts(services.path("redis").path("expose"))).contains("6379");
    assertThat(services.path("redis").has("ports"))
        .as("Redis stays on compose's network")
        .isFalse();
  }

  @Test
  void routers_listenBeyondLoopbackWithTheTokenOfASecretTheSimSends() throws IOException {
    String sim = servicesRunning("sim").get(0);
    String simToken = option(sim, "--router-token-file");
    for (String router : servicesRunning("router")) {
      assertThat(option(router, "--listen")).startsWith("0.0.0.0:");
      assertThat(parsed.get(router).hasMatchedOption("--insecure-no-auth")).isFalse();
      String file = option(router, "--auth-token-file");
      assertThat(file).as(router).startsWith("/run/secrets/").isEqualTo(simToken);
      String secret = file.substring("/run/secrets/".length());
      assertThat(texts(services.path(router).path("secrets"))).contains(secret);
      assertThat(texts(services.path(sim).path("secrets"))).contains(secret);
      Path source = root.resolve(compose.path("secrets").path(secret).path("file").asText());
      assertThat(source).as("the secret's file").isRegularFile();
      assertThat(Files.readString(source).trim()).hasSizeGreaterThanOrEqualTo(32);
      for (String mapping : texts(services.path(router).path("ports"))) {
        assertThat(mapping)
            .as(router + " is published on this host's loopback")
            .startsWith("127.0.0.1:");
      }
    }
  }

  @Test
  void ingestersAndRouters_shareTheIndexAndTheModelHashing() {
    Set<String> indexes = new HashSet<>();
    servicesRunning("ingester").forEach(s -> indexes.add(option(s, "--index-name")));
    servicesRunning("router").forEach(s -> indexes.add(option(s, "--index-name")));
    assertThat(indexes).hasSize(1);

    String sim = servicesRunning("sim").get(0);
    String expected =
        "sim-model=engine:sha256_cbor:"
            + option(sim, "--hash-seed")
            + ":"
            + option(sim, "--block-size");
    for (String router : servicesRunning("router")) {
      assertThat(parsed.get(router).matchedOptionValue("--model", List.<String>of()))
          .as(router + " keys the sim's model as the sim hashes it")
          .containsExactly(expected);
    }
  }

  @Test
  void discovery_namesTheSimServiceAndItsExposedPorts() {
    String sim = servicesRunning("sim").get(0);
    int pods = Integer.parseInt(option(sim, "--pods"));
    int publish = Integer.parseInt(option(sim, "--publish-port"));
    int replay = Integer.parseInt(option(sim, "--replay-port"));
    int http = Integer.parseInt(option(sim, "--http-port"));
    assertThat(option(sim, "--bind-host")).isEqualTo("0.0.0.0");
    Set<Integer> exposed = exposedPorts(services.path(sim).path("expose"));
    for (String ingester : servicesRunning("ingester")) {
      String file = option(ingester, "--discovery-file");
      Path source = mountedSource(ingester, file);
      // Read as the ingester reads it: the real discovery file parser, unknown keys refused.
      List<PodSpec> list;
      try (PodDiscovery discovery = PodDiscovery.file(source)) {
        list = discovery.pods();
      }
      assertThat(list).as(source + " lists every pod of the sim").hasSize(pods);
      for (int i = 0; i < pods; i++) {
        PodSpec pod = list.get(i);
        assertThat(pod.name()).isEqualTo("pod-" + i);
        assertThat(pod.model()).isEqualTo("sim-model");
        URI endpoint = URI.create(pod.publisherEndpoint());
        URI replayEndpoint = URI.create(pod.replayEndpoint());
        assertThat(endpoint.getHost()).isEqualTo(sim);
        assertThat(replayEndpoint.getHost()).isEqualTo(sim);
        assertThat(endpoint.getPort()).isEqualTo(publish + i).isIn(exposed);
        assertThat(replayEndpoint.getPort()).isEqualTo(replay + i).isIn(exposed);
        assertThat(pod.metricsUrl()).as(pod.name() + " metricsUrl").isNotNull();
        URI metrics = URI.create(pod.metricsUrl());
        assertThat(metrics.getScheme()).isEqualTo("http");
        assertThat(metrics.getHost()).as(pod.name() + " metricsUrl").isEqualTo(sim);
        assertThat(metrics.getPort()).as(pod.name() + " metricsUrl").isEqualTo(http + i);
        assertThat(metrics.getPort()).isIn(exposed);
        assertThat(metrics.getPath()).isEqualTo("/metrics");
      }
    }
  }

  @Test
  void sim_routesThroughTheRouters() {
    String sim = servicesRunning("sim").get(0);
    Set<String> routed = new HashSet<>();
    for (String url : option(sim, "--router").split(",")) {
      URI uri = URI.create(url);
      String router = uri.getHost();
      assertThat(servicesRunning("router")).as("the sim routes through " + url).contains(router);
      assertThat(uri.getPort())
          .isEqualTo(Integer.parseInt(option(router, "--listen").replaceAll(".*:", "")));
      assertThat(services.path(sim).path("depends_on").has(router)).isTrue();
      routed.add(router);
    }
    assertThat(routed).containsExactlyInAnyOrderElementsOf(servicesRunning("router"));
  }

  @Test
  void healthChecks_probeTheServicesOwnPort() {
    assertThat(services.path("redis").path("healthcheck").path("test").toString())
        .contains("redis-cli");
    for (String name : parsed.keySet()) {
      String kind = parsed.get(name).commandSpec().name();
      if (kind.equals("sim")) {
        continue;
      }
      int port =
          kind.equals("router")
              ? Integer.parseInt(option(name, "--listen").replaceAll(".*:", ""))
              : Integer.parseInt(option(name, "--http-port"));
      List<String> test = texts(services.path(name).path("healthcheck").path("test"));
      assertThat(String.join(" ", test))
          .as(name + " health check")
          .contains("http://localhost:" + port + "/readyz");
      for (String mapping : texts(services.path(name).path("ports"))) {
        assertThat(mapping).as(name + " publishes its own port").endsWith(":" + port);
      }
    }
  }

  @Test
  void dependsOn_namesServices() {
    for (Map.Entry<String, JsonNode> e : services.properties()) {
      e.getValue()
          .path("depends_on")
          .fieldNames()
          .forEachRemaining(d -> assertThat(services.has(d)).as(e.getKey() + " -> " + d).isTrue());
    }
  }

  private static Path mountedSource(String service, String target) {
    for (String volume : texts(services.path(service).path("volumes"))) {
      String[] parts = volume.split(":");
      if (parts.length >= 2 && parts[1].equals(target)) {
        Path source = root.resolve(parts[0]).normalize();
        assertThat(source).as(service + " mounts " + parts[0]).isRegularFile();
        return source;
      }
    }
    return fail(service + " reads " + target + " but mounts no file there");
  }

  private static Set<Integer> exposedPorts(JsonNode expose) {
    Set<Integer> ports = new HashSet<>();
    for (String e : texts(expose)) {
      String[] range = e.split("-");
      int from = Integer.parseInt(range[0]);
      int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
      for (int p = from; p <= to; p++) {
        ports.add(p);
      }
    }
    return ports;
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }
}
