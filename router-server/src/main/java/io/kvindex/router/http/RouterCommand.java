package io.kvindex.router.http;

import io.kvindex.common.KvIndexException;
import io.kvindex.router.KvRouter;
import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.ModelKeys;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.TtftCostModel;
import io.kvindex.service.ByteSizes;
import io.kvindex.service.Durations;
import io.kvindex.service.HttpService;
import io.kvindex.service.SettingOptions;
import io.kvindex.service.SettingValues;
import io.kvindex.service.Switches;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex router}: the HTTP scoring service. Runs until the process is stopped. Its flags
 * are the {@link RouterSetting}s, each read from its flag, else the environment, else the {@code
 * --config} file, else its default. Not thread-safe (picocli fills it once).
 */
@Command(
    name = "router",
    mixinStandardHelpOptions = true,
    modelTransformer = RouterCommand.Options.class,
    description = {
      "Serves the shared KV-cache index to gateways over HTTP:",
      "POST /score, POST /query (Dynamo/Mooncake indexer style), POST /observe (what the engine"
          + " reported: the closed loop), GET /metrics, /healthz, /readyz.",
      "The auth token is read from --auth-token-file, never from the command line.",
      "Each flag can also be set as the environment variable KVINDEX_<FLAG> (upper case, '-' as"
          + " '_'; comma-separated for repeatable flags) or as a key in the --config file; a flag"
          + " wins over the environment, which wins over the file."
    })
public final class RouterCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  /** Counted down to stop serving (by the shutdown hook, or a test). */
  final CountDownLatch stop = new CountDownLatch(1);

  /** Adds the settings' flags to the command. */
  static final class Options implements IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec commandSpec) {
      return SettingOptions.addTo(commandSpec, RouterSetting.all());
    }
  }

  /** What the settings resolve to: the router to build, and where and how to serve it. */
  record Service(KvRouterBuilder builder, ScoringServer.Builder server) {}

  @Override
  public Integer call() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Service service;
    try {
      service = service(System.getenv(), registry);
    } catch (IllegalArgumentException | IOException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    try {
      return serve(service, registry);
    } catch (KvIndexException | IOException e) {
      spec.commandLine().getErr().println("kvindex router: " + e.getMessage());
      return 1;
    }
  }

  /** The service this command line resolves to, given an environment. */
  Service service(Map<String, String> env, PrometheusMeterRegistry registry) throws IOException {
    SettingValues v = SettingOptions.values(spec, RouterSetting.all(), env);
    KvRouterBuilder builder = KvRouter.builder().meterRegistry(registry);
    v.apply(RouterSetting.SHARED.indexName, builder::indexName);
    v.apply(RouterSetting.SHARED.indexGroups, g -> builder.groups(Integer.parseInt(g)));
    v.apply(RouterSetting.SHARED.lookupBudget, b -> builder.lookupBudget(Durations.parse(b)));
    double[] guard = new double[2];
    v.apply(RouterSetting.SHARED.imbalanceAbsolute, a -> guard[0] = Double.parseDouble(a));
    v.apply(RouterSetting.SHARED.imbalanceRatio, r -> guard[1] = Double.parseDouble(r));
    TtftCostModel[] cost = {TtftCostModel.DEFAULT};
    v.apply(RouterSetting.SHARED.ttftCost, c -> cost[0] = TtftCostModel.parse(c));
    v.apply(
        RouterSetting.SHARED.pickPolicy,
        p -> builder.pickPolicy(PickPolicy.named(p, guard[0], guard[1], cost[0])));
    v.apply(RouterSetting.SHARED.driftWindow, w -> builder.driftWindow(Integer.parseInt(w)));
    v.apply(
        RouterSetting.SHARED.driftThreshold, t -> builder.driftThreshold(Double.parseDouble(t)));
    v.apply(RouterSetting.SHARED.resyncInterval, i -> builder.resyncInterval(Durations.parse(i)));
    List<String> seeds = v.values(RouterSetting.SHARED.clusterSeed);
    if (seeds.isEmpty()) {
      v.apply(RouterSetting.SHARED.redisUri, builder::redisUri);
    } else {
      builder.clusterSeeds(seeds);
    }
    v.apply(RouterSetting.SHARED.redisTlsCaFile, f -> builder.redisTlsCaFile(Path.of(f)));
    v.apply(RouterSetting.SHARED.sharedLoad, s -> builder.sharedLoad(Switches.parse(s)));
    v.apply(RouterSetting.SHARED.sharedLoadTtl, t -> builder.sharedLoadTtl(Durations.parse(t)));
    v.apply(
        RouterSetting.SHARED.sharedLoadMinAge, a -> builder.sharedLoadMinAge(Durations.parse(a)));
    v.apply(RouterSetting.SHARED.routerId, builder::routerId);
    v.apply(RouterSetting.SHARED.model, m -> model(builder, m));
    v.apply(RouterSetting.SHARED.defaultKeys, k -> builder.defaultModelKeys(ModelKeys.parse(k)));
    v.apply(
        RouterSetting.ADOPT_ENGINE_KEYS.setting, a -> builder.adoptEngineKeys(Switches.parse(a)));
    return new Service(builder, server(v));
  }

  /** How and where to serve: address, threads, limits, auth, timeouts. */
  private static ScoringServer.Builder server(SettingValues v) {
    ScoringServer.Builder server = ScoringServer.builder();
    v.apply(RouterSetting.LISTEN.setting, l -> server.address(address(l)));
    v.apply(RouterSetting.THREADS.setting, t -> server.threads(Integer.parseInt(t)));
    v.apply(
        RouterSetting.MAX_BODY_BYTES.setting,
        b -> server.maxBodyBytes(Math.toIntExact(ByteSizes.parse(b))));
    v.apply(RouterSetting.MAX_TOKENS.setting, t -> server.maxTokens(Integer.parseInt(t)));
    v.apply(RouterSetting.MAX_BLOCK_KEYS.setting, k -> server.maxBlockKeys(Integer.parseInt(k)));
    v.apply(RouterSetting.MAX_CANDIDATES.setting, c -> server.maxCandidates(Integer.parseInt(c)));
    v.apply(RouterSetting.MAX_NAME_BYTES.setting, n -> server.maxNameBytes(Integer.parseInt(n)));
    v.apply(RouterSetting.MAX_RECORD_TTL.setting, t -> server.maxRecordTtl(Durations.parse(t)));
    v.apply(RouterSetting.READ_TIMEOUT.setting, t -> server.readTimeout(Durations.parse(t)));
    v.apply(RouterSetting.IDLE_TIMEOUT.setting, t -> server.idleTimeout(Durations.parse(t)));
    v.apply(
        RouterSetting.AUTH_TOKEN_FILE.setting,
        f -> server.authToken(HttpService.readAuthToken(Path.of(f))));
    boolean[] authMetrics = new boolean[1];
    v.apply(RouterSetting.AUTH_METRICS.setting, m -> authMetrics[0] = bool(m));
    if (authMetrics[0] && v.value(RouterSetting.AUTH_TOKEN_FILE.setting) == null) {
      throw new IllegalArgumentException(
          "setting "
              + RouterSetting.AUTH_METRICS.setting.describe()
              + " is true, but there is no token: set "
              + RouterSetting.AUTH_TOKEN_FILE.setting.describe());
    }
    server.authMetrics(authMetrics[0]);
    v.apply(RouterSetting.INSECURE_NO_AUTH.setting, i -> server.insecureNoAuth(Switches.parse(i)));
    server
        .config(); // the settings checked together (auth beyond loopback), before Redis is reached
    return server;
  }

  private static boolean bool(String value) {
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException("'" + value + "' is neither true nor false");
    };
  }

  private static void model(KvRouterBuilder builder, String model) {
    int eq = model.lastIndexOf('=');
    if (eq <= 0) {
      throw new IllegalArgumentException(
          "'"
              + model
              + "' is malformed; expected NAME=engine:<algo>[:<seed>]:<blockSize>"
              + " or NAME=token:<blockSize>");
    }
    builder.model(model.substring(0, eq), ModelKeys.parse(model.substring(eq + 1)));
  }

  private int serve(Service service, PrometheusMeterRegistry registry) throws IOException {
    CountDownLatch closed = new CountDownLatch(1);
    Thread hook = new Thread(() -> stopAndWait(closed), "kvindex-router-stop");
    try (KvRouter router = service.builder().build();
        ScoringServer server = service.server().start(router, registry)) {
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

  static InetSocketAddress address(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("'" + hostPort + "' must be HOST:PORT");
    }
    try {
      return new InetSocketAddress(
          hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("'" + hostPort + "' must be HOST:PORT", e);
    }
  }
}
