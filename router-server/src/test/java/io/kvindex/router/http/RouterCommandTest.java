package io.kvindex.router.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.PrefixIndex;
import io.kvindex.redis.RedisConnector;
import io.kvindex.router.BuilderProbe;
import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.TtftCostModel;
import io.kvindex.service.Durations;
import io.kvindex.service.RouterSettings;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

@UsesRedis
class RouterCommandTest {

  @Test
  void call_servesUntilStopped(RedisStandalone redis, @TempDir Path dir) throws Exception {
    try (RedisConnector connector = RedisConnector.connect(redis.uri().toURI().toString())) {
      PrefixIndex.builder().redis(connector).build().close(); // an ingester creates the index
    }
    Path config = dir.resolve("router.json");
    Files.writeString(config, "{\"model\": [\"org/m:v1=token:16\"], \"lookup-budget\": \"250ms\"}");
    RouterCommand command = new RouterCommand();
    StringWriter out = new StringWriter();
    CommandLine line = new CommandLine(command).setOut(new PrintWriter(out, true));
    CompletableFuture<Integer> exit =
        CompletableFuture.supplyAsync(
            () ->
                line.execute(
                    "--listen", "127.0.0.1:0",
                    "--redis-uri", redis.uri().toURI().toString(),
                    "--config", config.toString()));
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    Matcher port = Pattern.compile("listening on http://127.0.0.1:(\\d+)").matcher("");
    while (!port.reset(out.toString()).find() && System.nanoTime() < deadline && !exit.isDone()) {
      Thread.onSpinWait();
    }
    assertThat(port.reset(out.toString()).find()).as(out.toString()).isTrue();
    HttpResponse<String> health =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port.group(1) + "/readyz"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);

    command.stop.countDown();
    assertThat(exit.get()).isZero();
  }

  @Test
  void service_flagBeatsEnvironmentBeatsFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("router.yaml");
    Files.writeString(
        file,
        "lookup-budget: 20ms\nmodel: [a=token:16, b=token:32]\nlisten: 0.0.0.0:9\nthreads: 3\n");
    RouterCommand command = new RouterCommand();
    CommandLine line = new CommandLine(command);
    line.parseArgs("--listen", "127.0.0.1:1", "--config", file.toString());

    RouterCommand.Service service =
        command.service(
            Map.of("KVINDEX_INDEX_NAME", "x", "KVINDEX_MODEL", "c=token:8, d=token:8"),
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));

    assertThat(service.server().config().address().getPort()).as("the flag").isEqualTo(1);
    assertThat(service.server().config().threads()).as("the file").isEqualTo(3);
    assertThat(BuilderProbe.indexName(service.builder())).as("the environment").isEqualTo("x");
    assertThat(BuilderProbe.lookupBudget(service.builder()))
        .as("the file")
        .isEqualTo(Duration.ofMillis(20));
    assertThat(BuilderProbe.models(service.builder()))
        .as("the environment beats the file")
        .containsExactlyInAnyOrder("c", "d");

    Files.writeString(file, "lookup_budget: 20ms\n");
    RouterCommand again = new RouterCommand();
    new CommandLine(again).parseArgs("--config", file.toString());
    assertThatThrownBy(
            () -> again.service(Map.of(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown setting 'lookup_budget'");
  }

  @Test
  void service_limitsAuthAndTimeoutsComeFromTheSettings(@TempDir Path dir) throws Exception {
    Path token = dir.resolve("token");
    Files.writeString(token, "  s3cret\n");
    RouterCommand command = new RouterCommand();
    new CommandLine(command)
        .parseArgs(
            "--max-body-bytes", "1000",
            "--max-tokens", "10",
            "--max-block-keys", "5",
            "--max-candidates", "7",
            "--max-name-bytes", "9",
            "--max-record-ttl", "1500ms",
            "--auth-token-file", token.toString(),
            "--read-timeout", "3s");

    ScoringServer.Config c =
        command
            .service(
                Map.of("KVINDEX_AUTH_METRICS", "TRUE", "KVINDEX_IDLE_TIMEOUT", "1m"),
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
            .server()
            .config();

    assertThat(c.maxBodyBytes()).isEqualTo(1000);
    assertThat(c.limits()).isEqualTo(new Limits(10, 5, 7, 9, Duration.ofMillis(1500)));
    assertThat(c.authToken()).as("read from the file, trimmed").isEqualTo("s3cret");
    assertThat(c.toString()).doesNotContain("s3cret");
    assertThat(c.authMetrics()).isTrue();
    assertThat(c.readTimeout()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.idleTimeout()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void service_defaultsAreTheServersConstants() throws Exception {
    RouterCommand command = new RouterCommand();
    new CommandLine(command).parseArgs();
    ScoringServer.Config c =
        command
            .service(Map.of(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
            .server()
            .config();
    assertThat(c.maxBodyBytes()).isEqualTo(ScoringServer.DEFAULT_MAX_BODY_BYTES);
    assertThat(c.limits())
        .isEqualTo(
            new Limits(
                ScoringServer.DEFAULT_MAX_TOKENS,
                ScoringServer.DEFAULT_MAX_BLOCK_KEYS,
                ScoringServer.DEFAULT_MAX_CANDIDATES,
                ScoringServer.DEFAULT_MAX_NAME_BYTES,
                ScoringServer.DEFAULT_MAX_RECORD_TTL));
    assertThat(c.address()).isEqualTo(ScoringServer.DEFAULT_ADDRESS);
    assertThat(c.authToken()).isNull();
    assertThat(c.authMetrics()).isFalse();
  }

  @Test
  void service_badLimitsAndAuthNameTheSetting(@TempDir Path dir) {
    assertRefused(dir, "max-candidates (--max-candidates", "--max-candidates", "5000");
    assertRefused(dir, "must be in [1, 4096]", "--max-candidates", "5000");
    assertRefused(dir, "max-tokens (--max-tokens", "--max-tokens", "0");
    assertRefused(dir, "whole number of seconds", "--read-timeout", "500ms");
    assertRefused(dir, "neither true nor false", "--auth-metrics", "yes");
    assertRefused(dir, "there is no token: set auth-token-file", "--auth-metrics", "true");
    assertRefused(
        dir,
        "auth-token-file (--auth-token-file, KVINDEX_AUTH_TOKEN_FILE)",
        "--auth-token-file",
        dir.resolve("missing").toString());
  }

  private static void assertRefused(Path dir, String message, String... args) {
    RouterCommand command = new RouterCommand();
    new CommandLine(command).parseArgs(args);
    assertThatThrownBy(
            () -> command.service(Map.of(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)))
        .as(String.join(" ", args))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  @Test
  void call_badFlagsExitWithUsageError() {
    StringWriter err = new StringWriter();
    CommandLine line = new CommandLine(new RouterCommand()).setErr(new PrintWriter(err, true));
    line.setParameterExceptionHandler(
        (e, args) -> {
          e.getCommandLine().getErr().println(e.getMessage());
          return 2;
        });

    assertThat(line.execute("--model", "m=token")).isEqualTo(2);
    assertThat(err.toString()).contains("engine:<algorithm>:<seed>:<blockSize>");
    assertThat(line.execute("--lookup-budget", "soon")).isEqualTo(2);
    assertThat(err.toString()).contains("'soon' is not a duration");
    assertThat(line.execute("--listen", "nowhere")).isEqualTo(2);
    assertThat(err.toString()).contains("must be HOST:PORT");
  }

  @Test
  void service_beyondLoopbackWithoutToken_refusedSayingWhatToDo(@TempDir Path dir)
      throws Exception {
    assertRefused(
        dir,
        "set auth-token-file (--auth-token-file, KVINDEX_AUTH_TOKEN_FILE)",
        "--listen",
        "0.0.0.0:8190");
    assertRefused(
        dir,
        "insecure-no-auth (--insecure-no-auth, KVINDEX_INSECURE_NO_AUTH)",
        "--listen",
        "[::]:8190");

    Path token = dir.resolve("token");
    Files.writeString(token, "s3cret\n");
    assertThat(config(Map.of(), "--listen", "0.0.0.0:8190", "--auth-token-file", token.toString()))
        .extracting(ScoringServer.Config::authToken)
        .isEqualTo("s3cret");
    assertThat(config(Map.of("KVINDEX_INSECURE_NO_AUTH", "true"), "--listen", "0.0.0.0:8190"))
        .extracting(ScoringServer.Config::authToken)
        .isNull();
    assertThat(config(Map.of(), "--listen", "127.0.0.1:8190").authToken())
        .as("loopback, as the demo runs")
        .isNull();
  }

  @Test
  void call_beyondLoopbackWithoutToken_exitsWithUsageErrorBeforeRedis() {
    StringWriter err = new StringWriter();
    CommandLine line = new CommandLine(new RouterCommand()).setErr(new PrintWriter(err, true));
    line.setParameterExceptionHandler(
        (e, args) -> {
          e.getCommandLine().getErr().println(e.getMessage());
          return 2;
        });

    assertThat(line.execute("--listen", "0.0.0.0:0", "--redis-uri", "redis://127.0.0.1:1"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("not a loopback address").contains("--auth-token-file");
  }

  private static ScoringServer.Config config(Map<String, String> env, String... args)
      throws Exception {
    RouterCommand command = new RouterCommand();
    new CommandLine(command).parseArgs(args);
    return command
        .service(env, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
        .server()
        .config();
  }

  /** An index of another format stops the router at start, saying what to do (rolling updates). */
  @Test
  void call_indexOfAnotherFormat_exitsOneSayingWhatToDo(RedisStandalone redis) throws Exception {
    String uri = redis.uri().toURI().toString();
    try (RedisConnector connector = RedisConnector.connect(uri)) {
      PrefixIndex.builder().indexName("fmt").redis(connector).build().close(); // format 1
    }
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> raw = client.connect()) {
      raw.sync().hset("kvindex:v1:{fmt/0}:meta", "format", "99");
    } finally {
      client.shutdown();
    }
    StringWriter err = new StringWriter();
    CommandLine line = new CommandLine(new RouterCommand()).setErr(new PrintWriter(err, true));

    int exit =
        line.execute(
            "--listen",
            "127.0.0.1:0",
            "--redis-uri",
            uri,
            "--index-name",
            "fmt",
            "--model",
            "org/m=token:16");

    assertThat(exit).isEqualTo(1);
    assertThat(err.toString())
        .contains("index 'fmt' has index format 99")
        .contains("another index name");
  }

  @Test
  void sharedLoadSettings_reachTheRouter() throws Exception {
    RouterCommand command = new RouterCommand();
    new CommandLine(command)
        .parseArgs("--shared-load", "true", "--shared-load-min-age", "2ms", "--router-id", "r-1");
    RouterCommand.Service service =
        command.service(Map.of(), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    assertThat(BuilderProbe.sharedLoad(service.builder())).isTrue();
    assertThat(BuilderProbe.sharedLoadMinAge(service.builder())).isEqualTo(Duration.ofMillis(2));
    assertThat(BuilderProbe.routerId(service.builder())).isEqualTo("r-1");
  }

  /**
   * The settings shared with the picker are declared in the shell, their defaults the library's.
   */
  @Test
  void sharedSettings_defaultToTheLibrarysDefaults() {
    RouterSettings shared = RouterSetting.SHARED;
    assertThat(shared.redisUri.defaultValue()).isEqualTo(KvRouterBuilder.DEFAULT_REDIS_URI);
    assertThat(shared.indexName.defaultValue()).isEqualTo(KvRouterBuilder.DEFAULT_INDEX_NAME);
    assertThat(Durations.parse(shared.lookupBudget.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_LOOKUP_BUDGET);
    assertThat(shared.pickPolicy.defaultValue()).isEqualTo(PickPolicy.ESTIMATED_TTFT);
    assertThat(shared.ttftCost.defaultValue()).isEqualTo(TtftCostModel.DEFAULT.toString());
    assertThat(Double.parseDouble(shared.imbalanceAbsolute.defaultValue()))
        .isEqualTo(PickPolicy.DEFAULT_IMBALANCE_ABSOLUTE);
    assertThat(Double.parseDouble(shared.imbalanceRatio.defaultValue()))
        .isEqualTo(PickPolicy.DEFAULT_IMBALANCE_RATIO);
    assertThat(Integer.parseInt(shared.driftWindow.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_DRIFT_WINDOW);
    assertThat(Double.parseDouble(shared.driftThreshold.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_DRIFT_THRESHOLD);
    assertThat(Durations.parse(shared.resyncInterval.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_RESYNC_INTERVAL);
    assertThat(Durations.parse(shared.sharedLoadTtl.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_SHARED_LOAD_TTL);
    assertThat(Durations.parse(shared.sharedLoadMinAge.defaultValue()))
        .isEqualTo(KvRouterBuilder.DEFAULT_SHARED_LOAD_MIN_AGE);
  }
}
