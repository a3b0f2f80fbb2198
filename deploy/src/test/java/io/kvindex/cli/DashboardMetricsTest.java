package io.kvindex.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvindex.index.Poll;
import io.kvindex.ingester.Ingester;
import io.kvindex.ingester.IngesterConfig;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.router.KvRouter;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.http.ScoringServer;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodConfig;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.StreamEndpoints;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code deploy/grafana/kvindex.json} and {@code deploy/prometheus/alerts.yaml} name only metrics
 * kvindex exports: a real ingester indexes a simulated pod, a real router scores its prompts over
 * HTTP, and every {@code kvindex_*} name either file mentions is then on one of their {@code
 * /metrics}. Redis's own metrics come from an exporter and are left out, by their {@code redis_}
 * prefix.
 */
@UsesRedis
class DashboardMetricsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final Pattern KVINDEX_NAME = Pattern.compile("\\bkvindex_[a-z0-9_]*[a-z0-9]");
  private static final Pattern REDIS_NAME = Pattern.compile("(?<![$\\w])redis_[a-z0-9_]*[a-z0-9]");
  private static final String MODEL = "org/dash";
  private static final String SEED = "42";
  private static final int BLOCK = 16;

  private static String dashboard;
  private static String alerts;

  @BeforeAll
  static void read() throws IOException {
    Path deploy = Path.of("..", "deploy");
    dashboard = Files.readString(deploy.resolve("grafana/kvindex.json"));
    alerts = Files.readString(deploy.resolve("prometheus/alerts.yaml"));
  }

  @Test
  void dashboard_everyPanelQueriesTheChosenPrometheus() throws IOException {
    JsonNode root = JSON.readTree(dashboard);
    assertThat(root.path("uid").asText()).isEqualTo("kvindex");
    List<JsonNode> queried = new ArrayList<>();
    for (JsonNode panel : root.path("panels")) {
      if (!panel.path("type").asText().equals("row")) {
        queried.add(panel);
      }
    }
    assertThat(queried).hasSizeGreaterThan(10);
    for (JsonNode panel : queried) {
      String title = panel.path("title").asText();
      assertThat(panel.path("datasource").path("uid").asText())
          .as(title)
          .isEqualTo("${datasource}");
      assertThat(panel.path("description").asText()).as(title).isNotBlank();
      assertThat(panel.path("targets")).as(title).isNotEmpty();
      panel
          .path("targets")
          .forEach(t -> assertThat(t.path("expr").asText()).as(title).isNotBlank());
    }
  }

  @Test
  void alerts_eachHasAnExpressionASeverityASummaryAndARunbook() throws IOException {
    List<String> names = new ArrayList<>();
    for (JsonNode group : YAML.readTree(alerts).path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        String name = rule.path("alert").asText();
        names.add(name);
        assertThat(rule.path("expr").asText()).as(name).isNotBlank();
        assertThat(rule.path("labels").path("severity").asText())
            .as(name)
            .isIn("warning", "critical");
        assertThat(rule.path("annotations").path("summary").asText()).as(name).isNotBlank();
        assertThat(rule.path("annotations").path("runbook").asText().length())
            .as(name + " runbook")
            .isGreaterThan(100);
      }
    }
    assertThat(names)
        .contains(
            "KvindexIngestLagHigh",
            "KvindexStreamFailed",
            "KvindexIndexUnavailable",
            "KvindexIngesterRealErrors",
            "KvindexRouterErrors",
            "KvindexLeasesUnowned",
            "KvindexHolderSlotsLow",
            "KvindexRedisMemoryNearMax")
        .doesNotHaveDuplicates();
  }

  @Test
  void redisMetrics_areTheExportersAndSaidToBe() throws IOException {
    List<String> expressions = new ArrayList<>();
    JSON.readTree(dashboard)
        .path("panels")
        .forEach(p -> p.path("targets").forEach(t -> expressions.add(t.path("expr").asText())));
    YAML.readTree(alerts)
        .path("groups")
        .forEach(g -> g.path("rules").forEach(r -> expressions.add(r.path("expr").asText())));
    assertThat(names(REDIS_NAME, String.join("\n", expressions)))
        .containsOnly("redis_memory_used_bytes", "redis_memory_max_bytes");
    assertThat(dashboard).contains("Redis exporter");
    assertThat(alerts).contains("Redis exporter");
  }

  @Test
  void kvindexMetrics_everyNameEitherFileUsesIsExported(RedisStandalone redis) throws Exception {
    Set<String> named = new TreeSet<>(names(KVINDEX_NAME, dashboard));
    named.addAll(names(KVINDEX_NAME, alerts));
    assertThat(named).hasSizeGreaterThan(10);

    String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
    int[] prompt = tokens(7_000);
    PrometheusMeterRegistry routerMeters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (SimulatedPod pod =
            SimulatedPod.start(
                PodConfig.builder()
                    .name("pod-0")
                    .model(MODEL)
                    .blockSize(BLOCK)
                    .capacityBlocks(64)
                    .hashSeed(SEED)
                    .build());
        Ingester ingester = Ingester.start(ingesterConfig(uri, pod));
        KvRouter router =
            KvRouter.builder()
                .redisUri(uri)
                .indexName("dash")
                .model(MODEL, ModelKeys.engine("sha256_cbor", SEED, BLOCK))
                .lookupBudget(Duration.ofSeconds(1))
                .meterRegistry(routerMeters)
                .build();
        ScoringServer server =
            ScoringServer.builder()
                .address(new InetSocketAddress("127.0.0.1", 0))
                .threads(1)
                .start(router, routerMeters)) {
      URI ingesterMetrics = URI.create("http://127.0.0.1:" + ingester.httpPort() + "/metrics");
      URI routerBase = URI.create("http://127.0.0.1:" + server.address().getPort());
      String score =
          "{\"model\":\""
              + MODEL
              + "\",\"token_ids\":"
              + IntStream.of(prompt)
                  .mapToObj(String::valueOf)
                  .collect(Collectors.joining(",", "[", "]"))
              + ",\"pods\":[\"pod-0\",\"pod-1\"],\"load\":{\"pod-0\":0},\"record_ttl_ms\":1000}";

      pod.submit(InferenceRequest.of(prompt, new int[] {1, 2}));
      await(
          "the router finds the prompt's blocks on pod-0",
          () -> post(routerBase.resolve("/score"), score),
          answer -> answer.contains("\"pod\":\"pod-0\",\"reason\":\"longest_prefix\""));
      pod.faults().dropFraction(1.0);
      pod.submit(InferenceRequest.of(tokens(8_000), new int[] {1})); // its batch is lost
      pod.faults().clear();
      pod.submit(InferenceRequest.of(tokens(9_000), new int[] {1})); // the next shows the gap
      await(
          "the ingester repairs the gap from the replay ring",
          () -> get(ingesterMetrics),
          page -> page.contains("kvindex_ingester_replays_total{"));
      pod.resetPrefixCache();
      pod.submit(InferenceRequest.of(tokens(10_000), new int[] {1})); // the clear goes out
      await(
          "the ingester purges pod-0 for its cache reset",
          () -> get(ingesterMetrics),
          page -> page.contains("kvindex_ingester_purges_total{"));

      Set<String> exported = new TreeSet<>(exportedNames(get(ingesterMetrics)));
      exported.addAll(exportedNames(get(routerBase.resolve("/metrics"))));
      named.removeAll(exported);
      assertThat(named).as("named in the dashboard or the alerts but not exported").isEmpty();
    }
  }

  private static IngesterConfig ingesterConfig(String uri, SimulatedPod pod) {
    StreamEndpoints e = pod.endpoints().get(0);
    return IngesterConfig.builder()
        .redisUri(uri)
        .indexName("dash")
        .replicaId("dash")
        .httpHost("127.0.0.1")
        .httpPort(0)
        .leaseTtl(Duration.ofMillis(1500))
        .reconcileInterval(Duration.ofMillis(200))
        .idleCatchUp(Duration.ofMillis(300))
        .replayIdleTimeout(Duration.ofMillis(500))
        .pod(
            new PodSpec(
                pod.name(),
                MODEL,
                e.publish(),
                !e.publishBound(),
                e.replay(),
                pod.httpAddress() + "/metrics",
                List.of(0),
                PodSpec.keyMode("engine"),
                e.topic()))
        .build();
  }

  /** A prompt of four full blocks and a part, of token ids from {@code first} on. */
  private static int[] tokens(int first) {
    return IntStream.range(0, BLOCK * 4 + 3).map(i -> first + i).toArray();
  }

  /** Waits until what {@code read} returns passes {@code test}; says what it last read if not. */
  private static void await(String what, Supplier<String> read, Predicate<String> test) {
    AtomicReference<String> last = new AtomicReference<>();
    try {
      Poll.until(
          () -> {
            last.set(read.get());
            return test.test(last.get());
          },
          Duration.ofSeconds(30));
    } catch (AssertionError e) {
      throw new AssertionError("waiting for " + what + "; last read: " + last.get(), e);
    }
  }

  /** Every distinct match of {@code pattern} in {@code text}. */
  private static Set<String> names(Pattern pattern, String text) {
    Set<String> out = new TreeSet<>();
    Matcher m = pattern.matcher(text);
    while (m.find()) {
      out.add(m.group());
    }
    return out;
  }

  /** Sample names and metric family names ({@code # TYPE} lines) of a Prometheus text page. */
  private static Set<String> exportedNames(String page) {
    Set<String> out = new TreeSet<>();
    for (String line : page.split("\n")) {
      if (line.startsWith("# TYPE ")) {
        out.add(line.split(" ")[2]);
      } else if (!line.isBlank() && !line.startsWith("#")) {
        out.add(line.split("[{ ]", 2)[0]);
      }
    }
    return out;
  }

  private static String get(URI uri) {
    return send(HttpRequest.newBuilder(uri).GET().build());
  }

  private static String post(URI uri, String body) {
    return send(
        HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(body)).build());
  }

  private static String send(HttpRequest request) {
    try {
      return HTTP.send(request, HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new UncheckedIOException(request.uri() + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
