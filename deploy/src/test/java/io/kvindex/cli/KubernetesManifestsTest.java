package io.kvindex.cli;

import static io.kvindex.cli.RenderedOverlay.map;
import static io.kvindex.cli.RenderedOverlay.parse;
import static io.kvindex.cli.RenderedOverlay.port;
import static io.kvindex.cli.RenderedOverlay.selects;
import static io.kvindex.cli.RenderedOverlay.settingsEnv;
import static io.kvindex.cli.RenderedOverlay.texts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.ParseResult;

/**
 * Validates deploy/kubernetes without a cluster: every overlay renders with {@code kubectl
 * kustomize} (skipped, saying so, where kubectl is absent; CI installs it), and what it renders
 * agrees with the services: each kvindex command line parses with the real command spec, each
 * environment variable is one the service or its launcher reads, probes and Services reach the
 * ports the flags open, the RBAC is get, list and watch on pods only, and the example vLLM pods
 * publish where their annotations say and hash as the router does.
 */
class KubernetesManifestsTest {
  private static final ObjectMapper YAML = RenderedOverlay.YAML;
  private static final List<String> OVERLAYS =
      List.of("standalone-redis", "external-redis", "prometheus");
  private static final String NAMESPACE = "kvindex";

  private static Path root;
  private static String image;
  private static boolean kubectl;
  private static final Map<String, RenderedOverlay> rendered = new LinkedHashMap<>();

  @BeforeAll
  static void render() throws Exception {
    root = repositoryRoot();
    JsonNode base =
        YAML.readTree(root.resolve("deploy/kubernetes/base/kustomization.yaml").toFile());
    JsonNode images = base.path("images").get(0);
    image = images.path("newName").asText() + ":" + images.path("newTag").asText();
    kubectl = onPath("kubectl");
    if (!kubectl && "true".equals(System.getenv("CI"))) {
      fail("kubectl is not on the PATH, and CI must render deploy/kubernetes: .ci/run installs it");
    }
    if (!kubectl) {
      return;
    }
    for (String overlay : OVERLAYS) {
      rendered.put(
          overlay, RenderedOverlay.render(root.resolve("deploy/kubernetes/overlays/" + overlay)));
    }
  }

  @BeforeEach
  void needsKubectl() {
    assumeTrue(
        kubectl,
        "kubectl is not on the PATH, so deploy/kubernetes is not rendered: install it (Debian:"
            + " apt-get install -y kubernetes-client) to run this test");
  }

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("deploy/kubernetes"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("deploy/kubernetes above " + Path.of("").toAbsolutePath()).isNotNull();
    return dir;
  }

  private static boolean onPath(String program) {
    return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, program)));
  }

  private static List<JsonNode> kind(String overlay, String kind) {
    return rendered.get(overlay).kind(kind);
  }

  private static JsonNode object(String overlay, String kind, String name) {
    return rendered.get(overlay).object(kind, name);
  }

  private static JsonNode container(String overlay, String deployment) {
    return rendered.get(overlay).container(deployment);
  }

  private static Map<String, JsonNode> env(String overlay, JsonNode container) {
    return rendered.get(overlay).env(container);
  }

  private static String setting(String overlay, JsonNode container, String flag, String fallback) {
    return rendered.get(overlay).setting(container, flag, fallback);
  }

  /** The variables the launcher itself reads. */
  private static Set<String> launcherEnv() throws IOException {
    Set<String> out = new TreeSet<>();
    Matcher m =
        Pattern.compile("KVINDEX_[A-Z_]+")
            .matcher(Files.readString(root.resolve("scripts/kvindex")));
    while (m.find()) {
      out.add(m.group());
    }
    return out;
  }

  // --- the tests ------------------------------------------------------------------------------

  @Test
  void overlays_renderTheWholeStackInOneNamespace() {
    for (String overlay : OVERLAYS) {
      assertThat(
              object(overlay, "Deployment", "kvindex-ingester")
                  .path("spec")
                  .path("replicas")
                  .asInt())
          .as(overlay + " ingester replicas")
          .isEqualTo(2);
      object(overlay, "Deployment", "kvindex-router");
      object(overlay, "Service", "kvindex-router");
      object(overlay, "Namespace", NAMESPACE);
      for (JsonNode d : rendered.get(overlay).all()) {
        if (!d.path("kind").asText().equals("Namespace")) {
          assertThat(d.path("metadata").path("namespace").asText())
              .as(
                  overlay
                      + ": "
                      + d.path("kind").asText()
                      + " "
                      + d.path("metadata").path("name").asText())
              .isEqualTo(NAMESPACE);
        }
      }
    }
    object("standalone-redis", "Deployment", "kvindex-redis");
    assertThat(kind("external-redis", "Deployment")).hasSize(3);
    for (String overlay : OVERLAYS) {
      object(overlay, "Deployment", "kvindex-epp");
      object(overlay, "Service", "kvindex-epp");
      object(overlay, "NetworkPolicy", "kvindex-epp");
    }
    object("prometheus", "ServiceMonitor", "kvindex");
  }

  @Test
  void containers_runTheImageAsKvindexSubcommandsThatParse() throws IOException {
    assertThat(Files.readString(root.resolve("Dockerfile")))
        .containsPattern("(?m)^ENTRYPOINT \\[\"[^\"]*scripts/kvindex\"\\]");
    for (String overlay : OVERLAYS) {
      for (String service : List.of("ingester", "router", "epp")) {
        JsonNode c = container(overlay, "kvindex-" + service);
        assertThat(c.path("image").asText())
            .as(overlay + " " + service + " image")
            .isEqualTo(image);
        assertThat(c.has("command")).as("the image's entrypoint, scripts/kvindex, runs").isFalse();
        assertThat(parse(overlay, c).commandSpec().name()).isEqualTo(service);
      }
    }
  }

  @Test
  void env_isOnlyWhatTheServiceOrItsLauncherReads() throws IOException {
    Set<String> launcher = launcherEnv();
    assertThat(launcher).contains("KVINDEX_JAVA_OPTS");
    for (String overlay : OVERLAYS) {
      for (String service : List.of("ingester", "router", "epp")) {
        JsonNode c = container(overlay, "kvindex-" + service);
        ParseResult parsed = parse(overlay, c);
        Set<String> reads = settingsEnv(parsed.commandSpec());
        assertThat(reads).contains("KVINDEX_REDIS_URI", "KVINDEX_INDEX_NAME");
        for (String var : env(overlay, c).keySet()) {
          assertThat(reads.contains(var) || launcher.contains(var))
              .as(overlay + " " + service + " reads " + var)
              .isTrue();
          String flag =
              "--"
                  + var.substring("KVINDEX_".length())
                      .toLowerCase(java.util.Locale.ROOT)
                      .replace('_', '-');
          assertThat(parsed.hasMatchedOption(flag))
              .as(var + " and " + flag + " both set")
              .isFalse();
        }
      }
    }
  }

  @Test
  void ingestersAndRouters_shareTheIndexWithRedisUsersAndSecretsOfTheirOwn() {
    for (String overlay : OVERLAYS) {
      JsonNode ingester = container(overlay, "kvindex-ingester");
      JsonNode router = container(overlay, "kvindex-router");
      JsonNode epp = container(overlay, "kvindex-epp");
      for (String flag : List.of("--index-name", "--index-groups")) {
        assertThat(String.valueOf(setting(overlay, ingester, flag, "default")))
            .as(overlay + " " + flag)
            .isEqualTo(String.valueOf(setting(overlay, router, flag, "default")))
            .isEqualTo(String.valueOf(setting(overlay, epp, flag, "default")));
      }
      assertThat(setting(overlay, epp, "--redis-uri", null))
          .as("the picker reads and writes what a router does, as the router's Redis user")
          .isEqualTo("secret kvindex-redis-router/uri");
      assertThat(setting(overlay, ingester, "--redis-uri", null))
          .isEqualTo("secret kvindex-redis-ingester/uri");
      assertThat(setting(overlay, router, "--redis-uri", null))
          .isEqualTo("secret kvindex-redis-router/uri");
    }
  }

  @Test
  void router_listensBeyondLoopbackWithTheTokenOfASecret() {
    for (String overlay : OVERLAYS) {
      JsonNode router = container(overlay, "kvindex-router");
      ParseResult parsed = parse(overlay, router);
      assertThat(parsed.hasMatchedOption("--insecure-no-auth")).isFalse();
      assertThat(env(overlay, router)).doesNotContainKey("KVINDEX_INSECURE_NO_AUTH");
      Path file = Path.of(setting(overlay, router, "--auth-token-file", null));
      JsonNode mount = null;
      for (JsonNode m : router.path("volumeMounts")) {
        if (file.startsWith(m.path("mountPath").asText())) {
          mount = m;
        }
      }
      assertThat(mount).as(overlay + ": a volume holds " + file).isNotNull();
      JsonNode volume = null;
      for (JsonNode v :
          rendered.get(overlay).template("kvindex-router").path("spec").path("volumes")) {
        if (v.path("name").asText().equals(mount.path("name").asText())) {
          volume = v;
        }
      }
      assertThat(volume).isNotNull();
      assertThat(volume.path("secret").path("secretName").asText())
          .isEqualTo("kvindex-router-auth");
      String relative = Path.of(mount.path("mountPath").asText()).relativize(file).toString();
      assertThat(volume.path("secret").path("items").findValuesAsText("path")).contains(relative);
      assertThat(volume.path("secret").path("items").findValuesAsText("key")).contains("token");
    }
  }

  @Test
  void probesAndServices_reachThePortsTheFlagsOpen() {
    for (String overlay : OVERLAYS) {
      JsonNode ingester = container(overlay, "kvindex-ingester");
      int ingesterPort = Integer.parseInt(setting(overlay, ingester, "--http-port", "9400"));
      checkServed(overlay, "kvindex-ingester", ingesterPort);
      JsonNode router = container(overlay, "kvindex-router");
      URI listen = URI.create("http://" + setting(overlay, router, "--listen", "127.0.0.1:8190"));
      assertThat(listen.getHost()).as("the router listens beyond its pod").isEqualTo("0.0.0.0");
      checkServed(overlay, "kvindex-router", listen.getPort());
    }
  }

  private static void checkServed(String overlay, String name, int port) {
    JsonNode c = container(overlay, name);
    assertThat(c.path("ports").findValuesAsText("containerPort"))
        .as(name)
        .contains(String.valueOf(port));
    assertThat(c.path("livenessProbe").path("httpGet").path("path").asText()).isEqualTo("/healthz");
    assertThat(c.path("readinessProbe").path("httpGet").path("path").asText()).isEqualTo("/readyz");
    assertThat(port(c, c.path("livenessProbe").path("httpGet").path("port"))).isEqualTo(port);
    assertThat(port(c, c.path("readinessProbe").path("httpGet").path("port"))).isEqualTo(port);
    JsonNode service = object(overlay, "Service", name);
    JsonNode template = object(overlay, "Deployment", name).path("spec").path("template");
    assertThat(
            selects(
                service.path("spec").path("selector"), template.path("metadata").path("labels")))
        .as(name + " Service selects its pods")
        .isTrue();
    assertThat(port(c, service.path("spec").path("ports").get(0).path("targetPort")))
        .isEqualTo(port);
  }

  @Test
  void rbac_isGetListWatchOnPodsForTheIngestersOnly() {
    for (String overlay : OVERLAYS) {
      assertThat(kind(overlay, "ClusterRole")).isEmpty();
      assertThat(kind(overlay, "ClusterRoleBinding")).isEmpty();
      assertThat(kind(overlay, "Role")).hasSize(2);
      JsonNode rules = object(overlay, "Role", "kvindex-ingester").path("rules");
      assertThat(rules.size()).isEqualTo(1);
      assertThat(texts(rules.get(0).path("apiGroups"))).containsExactly("");
      assertThat(texts(rules.get(0).path("resources"))).containsExactly("pods");
      assertThat(texts(rules.get(0).path("verbs")))
          .containsExactlyInAnyOrder("get", "list", "watch");
      JsonNode binding = object(overlay, "RoleBinding", "kvindex-ingester");
      assertThat(binding.path("roleRef").path("name").asText()).isEqualTo("kvindex-ingester");
      String account = binding.path("subjects").get(0).path("name").asText();
      object(overlay, "ServiceAccount", account);
      assertThat(binding.path("subjects").get(0).path("namespace").asText()).isEqualTo(NAMESPACE);
      JsonNode pod =
          object(overlay, "Deployment", "kvindex-ingester")
              .path("spec")
              .path("template")
              .path("spec");
      assertThat(pod.path("serviceAccountName").asText()).isEqualTo(account);
      JsonNode router =
          object(overlay, "Deployment", "kvindex-router")
              .path("spec")
              .path("template")
              .path("spec");
      assertThat(router.path("automountServiceAccountToken").asBoolean(true)).isFalse();
    }
  }

  @Test
  void disruptionBudgetsAndResources_keepAReplicaUpAndRequestWhatTheyUse() {
    for (String overlay : OVERLAYS) {
      for (String name : List.of("kvindex-ingester", "kvindex-router", "kvindex-epp")) {
        JsonNode d = object(overlay, "Deployment", name);
        JsonNode pdb = object(overlay, "PodDisruptionBudget", name);
        assertThat(
                selects(
                    pdb.path("spec").path("selector").path("matchLabels"),
                    d.path("spec").path("template").path("metadata").path("labels")))
            .as(name + " budget selects its pods")
            .isTrue();
        assertThat(pdb.path("spec").path("minAvailable").asInt())
            .isBetween(1, d.path("spec").path("replicas").asInt() - 1);
      }
      for (JsonNode d : kind(overlay, "Deployment")) {
        for (JsonNode c : d.path("spec").path("template").path("spec").path("containers")) {
          assertThat(c.path("resources").path("requests").has("cpu"))
              .as(c.path("name").asText())
              .isTrue();
          assertThat(c.path("resources").path("requests").has("memory"))
              .as(c.path("name").asText())
              .isTrue();
        }
      }
    }
  }

  @Test
  void redis_standaloneIsNoevictionWithTheReadmesAclUsersBehindTheUrisItsDocsCreate()
      throws IOException {
    String overlay = "standalone-redis";
    Path dir = root.resolve("deploy/kubernetes/overlays/" + overlay);
    String doc = Files.readString(dir.resolve("kustomization.yaml"));
    JsonNode service = object(overlay, "Service", "kvindex-redis");
    int servicePort = service.path("spec").path("ports").get(0).path("port").asInt();
    for (String user : List.of("ingester", "router")) {
      assertThat(doc)
          .as("the doc creates the " + user + "s' URI with their user, on the Service")
          .contains(
              "create secret generic kvindex-redis-"
                  + user
                  + " --from-literal=uri=\"redis://kvindex-"
                  + user
                  + ":$"
                  + user.toUpperCase(java.util.Locale.ROOT)
                  + "@kvindex-redis:"
                  + servicePort
                  + "\"");
      assertThat(doc)
          .contains("--from-literal=" + user + "=\"$" + user.toUpperCase(java.util.Locale.ROOT));
    }
    JsonNode redis = object(overlay, "Deployment", "kvindex-redis");
    assertThat(
            selects(
                service.path("spec").path("selector"),
                redis.path("spec").path("template").path("metadata").path("labels")))
        .isTrue();
    JsonNode c = redis.path("spec").path("template").path("spec").path("containers").get(0);
    assertThat(c.path("image").asText()).startsWith("redis:");
    String script = String.join(" ", texts(c.path("args")));
    assertThat(script)
        .contains("--maxmemory-policy noeviction")
        .contains("--aclfile /data/users.acl")
        .contains("/etc/redis/acl/redis-users.acl");
    for (String user : List.of("ingester", "router", "inspect")) {
      assertThat(script).contains(" >" + user + "-password ").contains("$(hash " + user + ")");
    }
    assertThat(port(c, service.path("spec").path("ports").get(0).path("targetPort")))
        .isEqualTo(6379);
    Map<String, String> volumes = new HashMap<>();
    for (JsonNode v : redis.path("spec").path("template").path("spec").path("volumes")) {
      volumes.put(
          v.path("name").asText(),
          v.has("secret")
              ? "secret " + v.path("secret").path("secretName").asText()
              : "configMap " + v.path("configMap").path("name").asText());
    }
    Map<String, String> mounts = new HashMap<>();
    for (JsonNode m : c.path("volumeMounts")) {
      mounts.put(m.path("mountPath").asText(), volumes.get(m.path("name").asText()));
    }
    assertThat(mounts).containsEntry("/etc/redis/passwords", "secret kvindex-redis-users");
    String acl = mounts.get("/etc/redis/acl").substring("configMap ".length());
    assertThat(object(overlay, "ConfigMap", acl).path("data").path("redis-users.acl").asText())
        .as(
            "the ACL lines are the overlay's file, which AclUsersTest holds to docs/operations.md's")
        .isEqualTo(Files.readString(dir.resolve("redis-users.acl")));
  }

  @Test
  void secrets_areTheOperatorsCreatedAsTheDocsSay() throws IOException {
    for (String overlay : OVERLAYS) {
      String docOf = overlay.equals("prometheus") ? "external-redis" : overlay;
      String doc =
          Files.readString(
              root.resolve("deploy/kubernetes/overlays/" + docOf + "/kustomization.yaml"));
      assertThat(kind(overlay, "Secret"))
          .as("the Secrets are the operator's, not the repository's")
          .isEmpty();
      for (JsonNode d : kind(overlay, "Deployment")) {
        JsonNode pod = d.path("spec").path("template").path("spec");
        Map<String, String> needed = new LinkedHashMap<>();
        for (JsonNode c : pod.path("containers")) {
          for (JsonNode e : c.path("env")) {
            JsonNode ref = e.path("valueFrom").path("secretKeyRef");
            if (!ref.isMissingNode()) {
              needed.put(
                  ref.path("name").asText(), " --from-literal=" + ref.path("key").asText() + "=");
            }
          }
        }
        for (JsonNode v : pod.path("volumes")) {
          String secret = v.path("secret").path("secretName").asText();
          if (!secret.isEmpty()) {
            needed.put(secret, "");
            for (String key : v.path("secret").path("items").findValuesAsText("key")) {
              needed.put(secret, " --from-literal=" + key + "=");
            }
          }
        }
        needed.forEach(
            (secret, key) ->
                assertThat(doc)
                    .as(overlay + ": " + d.path("metadata").path("name").asText())
                    .contains("create secret generic " + secret + (key.isEmpty() ? " " : key)));
      }
    }
  }

  @Test
  void prometheus_serviceMonitorScrapesBothServices() {
    JsonNode monitor = object("prometheus", "ServiceMonitor", "kvindex");
    JsonNode endpoint = monitor.path("spec").path("endpoints").get(0);
    assertThat(endpoint.path("path").asText()).isEqualTo("/metrics");
    for (String name : List.of("kvindex-ingester", "kvindex-router", "kvindex-epp")) {
      JsonNode service = object("prometheus", "Service", name);
      assertThat(
              selects(
                  monitor.path("spec").path("selector").path("matchLabels"),
                  service.path("metadata").path("labels")))
          .as("the ServiceMonitor selects " + name)
          .isTrue();
      assertThat(service.path("spec").path("ports").findValuesAsText("name"))
          .contains(endpoint.path("port").asText());
    }
  }

  @Test
  void vllmExample_publishesWhereItsAnnotationsSayAndHashesAsTheRouter() throws IOException {
    JsonNode deployment =
        YAML.readTree(root.resolve("deploy/kubernetes/examples/vllm.yaml").toFile());
    JsonNode template = deployment.path("spec").path("template");
    Map<String, String> notes = map(template.path("metadata").path("annotations"));
    JsonNode vllm = template.path("spec").path("containers").get(0);
    Map<String, String> flags = vllmFlags(texts(vllm.path("args")));
    Map<String, String> env = new HashMap<>();
    vllm.path("env").forEach(e -> env.put(e.path("name").asText(), e.path("value").asText()));

    JsonNode events = YAML.readTree(flags.get("--kv-events-config"));
    assertThat(events.path("enable_kv_cache_events").asBoolean()).isTrue();
    assertThat(events.path("publisher").asText()).isEqualTo("zmq");
    assertThat(events.path("endpoint").asText())
        .isEqualTo("tcp://*:" + notes.get("kvindex.io/kv-events-port"));
    assertThat(events.path("replay_endpoint").asText())
        .isEqualTo("tcp://*:" + notes.get("kvindex.io/replay-port"));
    assertThat(flags)
        .containsEntry("--prefix-caching-hash-algo", "sha256_cbor")
        .containsKey("--enable-prompt-tokens-details");
    assertThat(flags.get("--port")).isEqualTo(notes.get("kvindex.io/metrics-port"));
    assertThat(vllm.path("ports").findValuesAsText("containerPort"))
        .contains(
            notes.get("kvindex.io/kv-events-port"),
            notes.get("kvindex.io/replay-port"),
            flags.get("--port"));
    assertThat(env).containsKey("PYTHONHASHSEED");
    assertThat(notes.get("kvindex.io/model")).isEqualTo(flags.get("--model"));
    assertThat(notes).containsEntry("kvindex.io/key-mode", "engine");

    for (String overlay : OVERLAYS) {
      JsonNode ingester = container(overlay, "kvindex-ingester");
      assertThat(deployment.path("metadata").path("namespace").asText())
          .as("the ingesters watch their own namespace")
          .isEqualTo(setting(overlay, ingester, "--kubernetes-namespaces", NAMESPACE));
      for (String term :
          setting(overlay, ingester, "--kubernetes-label-selector", "kvindex.io/enabled=true")
              .split(",")) {
        String[] kv = term.split("=", 2);
        assertThat(map(template.path("metadata").path("labels"))).containsEntry(kv[0], kv[1]);
      }
      List<String> models =
          parse(overlay, container(overlay, "kvindex-router"))
              .matchedOptionValue("--model", List.of());
      assertThat(models)
          .as(overlay + ": the router hashes the model as the pods do")
          .contains(
              notes.get("kvindex.io/model")
                  + "=engine:"
                  + flags.get("--prefix-caching-hash-algo")
                  + ":"
                  + env.get("PYTHONHASHSEED")
                  + ":"
                  + flags.get("--block-size"));
    }
  }

  @Test
  void epp_readsItsPoolAndPodsOnly() {
    for (String overlay : OVERLAYS) {
      JsonNode rules = object(overlay, "Role", "kvindex-epp").path("rules");
      Map<String, String> groups = new HashMap<>();
      for (JsonNode rule : rules) {
        assertThat(texts(rule.path("verbs"))).containsExactlyInAnyOrder("get", "list", "watch");
        for (String resource : texts(rule.path("resources"))) {
          groups.put(resource, texts(rule.path("apiGroups")).get(0));
        }
      }
      assertThat(groups)
          .containsExactlyInAnyOrderEntriesOf(
              Map.of("pods", "", "inferencepools", "inference.networking.k8s.io"));
      JsonNode binding = object(overlay, "RoleBinding", "kvindex-epp");
      assertThat(binding.path("roleRef").path("name").asText()).isEqualTo("kvindex-epp");
      String account = binding.path("subjects").get(0).path("name").asText();
      object(overlay, "ServiceAccount", account);
      assertThat(
              rendered
                  .get(overlay)
                  .template("kvindex-epp")
                  .path("spec")
                  .path("serviceAccountName")
                  .asText())
          .isEqualTo(account);
    }
  }

  @Test
  void eppExamples_routeThroughThePickerToTheVllmPods() throws IOException {
    JsonNode vllm = YAML.readTree(root.resolve("deploy/kubernetes/examples/vllm.yaml").toFile());
    JsonNode pool =
        YAML.readTree(root.resolve("deploy/kubernetes/examples/inferencepool.yaml").toFile());
    List<JsonNode> gateway = new ArrayList<>();
    YAML.readerFor(JsonNode.class)
        .readValues(root.resolve("deploy/kubernetes/examples/gateway.yaml").toFile())
        .forEachRemaining(d -> gateway.add((JsonNode) d));
    JsonNode template = vllm.path("spec").path("template");
    JsonNode container = template.path("spec").path("containers").get(0);

    assertThat(pool.path("apiVersion").asText()).isEqualTo("inference.networking.k8s.io/v1");
    assertThat(pool.path("metadata").path("namespace").asText())
        .as("the pool lives with its pods and its picker")
        .isEqualTo(vllm.path("metadata").path("namespace").asText())
        .isEqualTo(NAMESPACE);
    assertThat(
            selects(
                pool.path("spec").path("selector").path("matchLabels"),
                template.path("metadata").path("labels")))
        .as("the pool selects the vLLM pods")
        .isTrue();
    assertThat(pool.path("spec").path("targetPorts").findValuesAsText("number"))
        .containsExactly(vllmFlags(texts(container.path("args"))).get("--port"));

    JsonNode httpRoute =
        gateway.stream()
            .filter(d -> d.path("kind").asText().equals("HTTPRoute"))
            .findFirst()
            .orElseThrow();
    JsonNode gw =
        gateway.stream()
            .filter(d -> d.path("kind").asText().equals("Gateway"))
            .findFirst()
            .orElseThrow();
    JsonNode backend = httpRoute.path("spec").path("rules").get(0).path("backendRefs").get(0);
    assertThat(backend.path("group").asText()).isEqualTo("inference.networking.k8s.io");
    assertThat(backend.path("kind").asText()).isEqualTo("InferencePool");
    assertThat(backend.path("name").asText())
        .isEqualTo(pool.path("metadata").path("name").asText());
    assertThat(httpRoute.path("spec").path("parentRefs").get(0).path("name").asText())
        .isEqualTo(gw.path("metadata").path("name").asText());

    for (String overlay : OVERLAYS) {
      JsonNode epp = container(overlay, "kvindex-epp");
      ParseResult parsed = parse(overlay, epp);
      assertThat(setting(overlay, epp, "--pool-name", null))
          .isEqualTo(pool.path("metadata").path("name").asText());
      assertThat(parsed.matchedOptionValue("--model", List.<String>of()))
          .as(overlay + ": the picker hashes as the router")
          .isEqualTo(
              parse(overlay, container(overlay, "kvindex-router"))
                  .matchedOptionValue("--model", List.<String>of()));
      JsonNode ref = pool.path("spec").path("endpointPickerRef");
      JsonNode service = object(overlay, "Service", ref.path("name").asText());
      JsonNode servicePort = null;
      for (JsonNode p : service.path("spec").path("ports")) {
        if (p.path("port").asInt() == ref.path("port").path("number").asInt()) {
          servicePort = p;
        }
      }
      assertThat(servicePort).as("the Service serves the pool's picker port").isNotNull();
      int listen =
          Integer.parseInt(setting(overlay, epp, "--listen", "127.0.0.1:9002").split(":")[1]);
      assertThat(setting(overlay, epp, "--listen", null)).startsWith("0.0.0.0:");
      assertThat(port(epp, servicePort.path("targetPort"))).isEqualTo(listen);
      assertThat(
              selects(
                  service.path("spec").path("selector"),
                  rendered.get(overlay).template("kvindex-epp").path("metadata").path("labels")))
          .isTrue();
      for (String probe : List.of("livenessProbe", "readinessProbe")) {
        assertThat(epp.path(probe).path("grpc").path("port").asInt()).isEqualTo(listen);
      }
      assertThat(epp.path("readinessProbe").path("grpc").path("service").asText())
          .isEqualTo("readiness");
      JsonNode policy = object(overlay, "NetworkPolicy", "kvindex-epp");
      assertThat(policy.path("spec").path("ingress").get(0).path("ports").findValuesAsText("port"))
          .as("the network policy guards the ext_proc port")
          .containsExactly(String.valueOf(listen));
    }
  }

  /** vLLM's flags, as {@code --name=value}, {@code --name value} or a bare {@code --name}. */
  private static Map<String, String> vllmFlags(List<String> args) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      int eq = a.indexOf('=');
      if (eq > 0) {
        out.put(a.substring(0, eq), a.substring(eq + 1));
      } else if (i + 1 < args.size() && !args.get(i + 1).startsWith("--")) {
        out.put(a, args.get(++i));
      } else {
        out.put(a, "");
      }
    }
    return out;
  }
}
