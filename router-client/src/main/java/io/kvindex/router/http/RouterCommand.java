package io.kvindex.router.http;

import io.kvindex.common.KvIndexException;
import io.kvindex.router.KvRouter;
import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.PickPolicy;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex router}: the HTTP scoring service. Runs until the process is stopped. Not
 * thread-safe (picocli fills it once).
 */
@Command(
    name = "router",
    mixinStandardHelpOptions = true,
    description = {
      "Serves the shared KV-cache index to gateways over HTTP:",
      "POST /score, POST /query (Dynamo/Mooncake indexer style), GET /metrics, /healthz, /readyz.",
      "Each flag can also be set as the environment variable KVINDEX_<FLAG> (upper case, '-' as"
          + " '_'; comma-separated for repeatable flags) or as a key in the --config file; a flag"
          + " wins over the environment, which wins over the file."
    })
public final class RouterCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  /** Counted down to stop serving (by the shutdown hook, or a test). */
  final CountDownLatch stop;

  /** Created by picocli. */
  public RouterCommand() {
    this(new CountDownLatch(1));
  }

  private RouterCommand(CountDownLatch stop) {
    this.stop = stop;
  }

  @Option(
      names = "--config",
      paramLabel = "FILE",
      description = "YAML or JSON file of settings, keyed by flag name without the dashes")
  Path configFile;

  @Option(
      names = "--listen",
      defaultValue = "127.0.0.1:8190",
      description =
          "Address to serve on, HOST:PORT (port 0 picks a free one). Default: ${DEFAULT-VALUE}")
  String listen;

  @Option(
      names = "--redis-uri",
      defaultValue = "redis://127.0.0.1:6379",
      description =
          "redis://[user:password@]host:port (rediss:// for TLS), or"
              + " redis-cluster://host1:port1,host2:port2. Default: ${DEFAULT-VALUE}")
  String redisUri;

  @Option(
      names = "--cluster-seed",
      description = "A Redis Cluster seed node URI; repeat for more. Replaces --redis-uri.")
  List<String> clusterSeeds = new ArrayList<>();

  @Option(
      names = {"--index-name", "--index"},
      defaultValue = "default",
      description = "Index name, as the ingesters use it. Default: ${DEFAULT-VALUE}")
  String indexName;

  @Option(
      names = "--index-groups",
      defaultValue = "1",
      description = "Index groups, as the ingesters use them. Default: ${DEFAULT-VALUE}")
  int indexGroups;

  @Option(
      names = "--model",
      paramLabel = "NAME=KEYS",
      description =
          "A model's key mode, repeatable: NAME=engine:<algo>:<seed>:<blockSize> or NAME=token:<blockSize>")
  List<String> models = new ArrayList<>();

  @Option(
      names = "--default-keys",
      paramLabel = "KEYS",
      description = "Key mode of models not named by --model (default: such models are rejected)")
  String defaultKeys;

  @Option(
      names = "--lookup-budget",
      defaultValue = "5ms",
      converter = DurationConverter.class,
      description =
          "Longest time one lookup may take, retries included (e.g. 5ms, 1s). Default: ${DEFAULT-VALUE}")
  Duration lookupBudget;

  @Option(
      names = "--threads",
      defaultValue = "8",
      description = "Request threads. Default: ${DEFAULT-VALUE}")
  int threads;

  @Option(
      names = "--imbalance-absolute",
      defaultValue = "16",
      description = "Pick guard: load units above the least loaded pod. Default: ${DEFAULT-VALUE}")
  double imbalanceAbsolute;

  @Option(
      names = "--imbalance-ratio",
      defaultValue = "1.5",
      description = "Pick guard: factor over the least loaded pod. Default: ${DEFAULT-VALUE}")
  double imbalanceRatio;

  @Override
  public Integer call() throws Exception {
    List<String> fromSources;
    try {
      fromSources = SettingSources.args(spec, System.getenv(), configFile);
    } catch (IllegalArgumentException | IOException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    if (fromSources.isEmpty()) {
      return run();
    }
    List<String> all = new ArrayList<>(spec.commandLine().getParseResult().originalArgs());
    all.addAll(fromSources);
    RouterCommand resolved = new RouterCommand(stop);
    CommandLine line = new CommandLine(resolved);
    line.setOut(spec.commandLine().getOut()).setErr(spec.commandLine().getErr());
    try {
      line.parseArgs(all.toArray(String[]::new));
    } catch (ParameterException e) {
      throw new ParameterException(
          spec.commandLine(), "from the environment or --config: " + e.getMessage(), e);
    }
    return resolved.run();
  }

  private int run() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    KvRouterBuilder builder;
    InetSocketAddress address;
    try {
      builder = builder(registry);
      address = address(listen);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    try {
      return serve(builder, registry, address);
    } catch (KvIndexException | IOException e) {
      spec.commandLine().getErr().println("kvindex router: " + e.getMessage());
      return 1;
    }
  }

  private int serve(
      KvRouterBuilder builder, PrometheusMeterRegistry registry, InetSocketAddress address)
      throws IOException {
    CountDownLatch closed = new CountDownLatch(1);
    Thread hook = new Thread(() -> stopAndWait(closed), "kvindex-router-stop");
    try (KvRouter router = builder.build();
        ScoringServer server = ScoringServer.start(router, registry, address, threads)) {
      PrintWriter out = spec.commandLine().getOut();
      InetSocketAddress bound = server.address();
      out.println(
          "kvindex router listening on http://" + bound.getHostString() + ":" + bound.getPort());
      out.flush();
      Runtime.getRuntime().addShutdownHook(hook);
      stop.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      closed.countDown();
      removeHook(hook);
    }
    return 0;
  }

  private static void removeHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException | IllegalArgumentException e) {
      // the JVM is shutting down (the hook is running), or the hook was never added
    }
  }

  /** On SIGTERM: lets {@link #serve} close the server and Redis connections, for up to 5 s. */
  private void stopAndWait(CountDownLatch closed) {
    stop.countDown();
    try {
      closed.await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  KvRouterBuilder builder(PrometheusMeterRegistry registry) {
    KvRouterBuilder builder =
        KvRouter.builder()
            .indexName(indexName)
            .groups(indexGroups)
            .lookupBudget(lookupBudget)
            .pickPolicy(PickPolicy.standard(imbalanceAbsolute, imbalanceRatio))
            .meterRegistry(registry);
    if (clusterSeeds.isEmpty()) {
      builder.redisUri(redisUri);
    } else {
      builder.clusterSeeds(clusterSeeds);
    }
    for (String model : models) {
      int eq = model.lastIndexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(
            "--model '"
                + model
                + "' is malformed; expected NAME=engine:<algo>:<seed>:<blockSize>"
                + " or NAME=token:<blockSize>");
      }
      builder.model(model.substring(0, eq), ModelKeys.parse(model.substring(eq + 1)));
    }
    if (defaultKeys != null) {
      builder.defaultModelKeys(ModelKeys.parse(defaultKeys));
    }
    return builder;
  }

  static InetSocketAddress address(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("--listen '" + hostPort + "' must be HOST:PORT");
    }
    try {
      return new InetSocketAddress(
          hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--listen '" + hostPort + "' must be HOST:PORT", e);
    }
  }

  /** Reads {@code 5ms}, {@code 250us}, {@code 2s} or ISO-8601 ({@code PT0.005S}). */
  static final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      String v = value.trim().toLowerCase(Locale.ROOT);
      try {
        if (v.startsWith("pt")) {
          return Duration.parse(value.trim());
        }
        if (v.endsWith("ms")) {
          return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
        }
        if (v.endsWith("us")) {
          return Duration.ofNanos(Long.parseLong(v.substring(0, v.length() - 2)) * 1000);
        }
        if (v.endsWith("s")) {
          return Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1)));
        }
      } catch (RuntimeException e) {
        // fall through to the message below
      }
      throw new IllegalArgumentException(
          "'" + value + "' is not a duration; write for example 5ms, 250us or 2s");
    }
  }
}
