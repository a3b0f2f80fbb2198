package io.kvindex.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.fabric8.kubernetes.client.Config;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvindex epp}: the endpoint picker a Gateway API inference gateway calls for every request,
 * over Envoy's external processing protocol. Runs until the process is stopped. Its flags are the
 * {@link EppSetting}s, each read from its flag, else the environment, else the {@code --config}
 * file, else its default. Not thread-safe (picocli fills it once).
 */
@Command(
    name = "epp",
    mixinStandardHelpOptions = true,
    modelTransformer = EppCommand.Options.class,
    description = {
      "The endpoint picker of a Gateway API inference gateway (an InferencePool's"
          + " endpointPickerRef): Envoy's ext_proc gRPC service, picking each request's endpoint"
          + " with the shared KV-cache index and reporting the engines' usage back to it.",
      "gRPC health on the same port; GET /metrics, /healthz, /readyz on --metrics-listen.",
      "The auth token is read from --auth-token-file, never from the command line.",
      "Each flag can also be set as the environment variable KVINDEX_<FLAG> (upper case, '-' as"
          + " '_'; comma-separated for repeatable flags) or as a key in the --config file; a flag"
          + " wins over the environment, which wins over the file."
    })
public final class EppCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  /** Counted down to stop serving (by the shutdown hook, or a test). */
  final CountDownLatch stop = new CountDownLatch(1);

  /** Adds the settings' flags to the command. */
  static final class Options implements IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec commandSpec) {
      return SettingOptions.addTo(commandSpec, EppSetting.all());
    }
  }

  /** What the settings resolve to. */
  record Service(KvRouterBuilder router, EppConfig config, CandidateSpec candidates) {}

  /** Where the candidates come from: an InferencePool, or a static list. */
  record CandidateSpec(String pool, String namespace, boolean podNameIsIp, List<Endpoint> fixed) {}

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
      spec.commandLine().getErr().println("kvindex epp: " + e.getMessage());
      return 1;
    }
  }

  /** The service this command line resolves to, given an environment. */
  Service service(Map<String, String> env, PrometheusMeterRegistry registry) throws IOException {
    SettingValues v = SettingOptions.values(spec, EppSetting.all(), env);
    KvRouterBuilder router = KvRouter.builder().meterRegistry(registry);
    Set<String> models = new HashSet<>();
    boolean[] anyModel = new boolean[1];
    routerSettings(v, router, models, anyModel);
    Map<String, String> adapters = new HashMap<>();
    v.apply(EppSetting.LORA_ADAPTER.setting, a -> adapter(a, adapters));
    EppConfig.Builder config = EppConfig.builder().models(models, anyModel[0], adapters);
    v.apply(EppSetting.LISTEN.setting, l -> config.listen(address(l)));
    v.apply(EppSetting.METRICS_LISTEN.setting, l -> config.metricsListen(address(l)));
    v.apply(EppSetting.THREADS.setting, t -> config.threads(Integer.parseInt(t)));
    v.apply(
        EppSetting.MAX_BODY_BYTES.setting,
        b -> config.maxBodyBytes(Math.toIntExact(ByteSizes.parse(b))));
    v.apply(EppSetting.FALLBACKS.setting, f -> config.fallbacks(Integer.parseInt(f)));
    v.apply(EppSetting.ROUTE_TTL.setting, t -> config.routeTtl(Durations.parse(t)));
    v.apply(
        EppSetting.ANSWERED_ROUTE_TTL.setting, t -> config.answeredRouteTtl(Durations.parse(t)));
    v.apply(EppSetting.TOKENIZE_TIMEOUT.setting, t -> config.tokenizeTimeout(Durations.parse(t)));
    v.apply(EppSetting.SCRAPE_INTERVAL.setting, t -> config.scrapeInterval(Durations.parse(t)));
    v.apply(EppSetting.SCRAPE_TIMEOUT.setting, t -> config.scrapeTimeout(Durations.parse(t)));
    v.apply(EppSetting.SCRAPE_STALENESS.setting, t -> config.scrapeStaleness(Durations.parse(t)));
    v.apply(EppSetting.QUEUE_THRESHOLD.setting, q -> config.queueThreshold(Double.parseDouble(q)));
    v.apply(
        EppSetting.KV_CACHE_THRESHOLD.setting, k -> config.kvCacheThreshold(Double.parseDouble(k)));
    v.apply(
        EppSetting.WAITING_REQUEST_TOKENS.setting,
        t -> config.waitingRequestTokens(Double.parseDouble(t)));
    config.sheddableObjectives(Set.copyOf(v.values(EppSetting.SHEDDABLE_OBJECTIVES.setting)));
    v.apply(
        EppSetting.BODY_MODES.setting,
        m -> {
          BodySendMode mode = BodySendMode.valueOf(m.trim().toUpperCase(Locale.ROOT));
          config.assumedBodyModes(mode, mode);
        });
    v.apply(EppSetting.SHUTDOWN_GRACE.setting, g -> config.shutdownGrace(Durations.parse(g)));
    v.apply(
        EppSetting.AUTH_TOKEN_FILE.setting,
        f -> config.authToken(HttpService.readAuthToken(Path.of(f))));
    boolean[] insecure = new boolean[1];
    v.apply(EppSetting.INSECURE_NO_AUTH.setting, i -> insecure[0] = Switches.parse(i));
    EppConfig built = config.build();
    refuseOpenBeyondLoopback(built, insecure[0]);
    return new Service(router, built, candidates(v));
  }

  private static void routerSettings(
      SettingValues v, KvRouterBuilder builder, Set<String> models, boolean[] anyModel) {
    v.apply(EppSetting.SHARED.indexName, builder::indexName);
    v.apply(EppSetting.SHARED.indexGroups, g -> builder.groups(Integer.parseInt(g)));
    v.apply(EppSetting.SHARED.lookupBudget, b -> builder.lookupBudget(Durations.parse(b)));
    double[] guard = new double[2];
    v.apply(EppSetting.SHARED.imbalanceAbsolute, a -> guard[0] = Double.parseDouble(a));
    v.apply(EppSetting.SHARED.imbalanceRatio, r -> guard[1] = Double.parseDouble(r));
    TtftCostModel[] cost = {TtftCostModel.DEFAULT};
    v.apply(EppSetting.SHARED.ttftCost, c -> cost[0] = TtftCostModel.parse(c));
    v.apply(
        EppSetting.SHARED.pickPolicy,
        p -> builder.pickPolicy(PickPolicy.named(p, guard[0], guard[1], cost[0])));
    v.apply(EppSetting.SHARED.driftWindow, w -> builder.driftWindow(Integer.parseInt(w)));
    v.apply(EppSetting.SHARED.driftThreshold, t -> builder.driftThreshold(Double.parseDouble(t)));
    v.apply(EppSetting.SHARED.resyncInterval, i -> builder.resyncInterval(Durations.parse(i)));
    List<String> seeds = v.values(EppSetting.SHARED.clusterSeed);
    if (seeds.isEmpty()) {
      v.apply(EppSetting.SHARED.redisUri, builder::redisUri);
    } else {
      builder.clusterSeeds(seeds);
    }
    v.apply(EppSetting.SHARED.redisTlsCaFile, f -> builder.redisTlsCaFile(Path.of(f)));
    v.apply(EppSetting.SHARED.sharedLoad, s -> builder.sharedLoad(Switches.parse(s)));
    v.apply(EppSetting.SHARED.sharedLoadTtl, t -> builder.sharedLoadTtl(Durations.parse(t)));
    v.apply(EppSetting.SHARED.sharedLoadMinAge, a -> builder.sharedLoadMinAge(Durations.parse(a)));
    v.apply(EppSetting.SHARED.routerId, builder::routerId);
    v.apply(
        EppSetting.SHARED.model,
        m -> {
          int eq = m.lastIndexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException(
                "'"
                    + m
                    + "' is malformed; expected NAME=engine:<algo>[:<seed>]:<blockSize> or"
                    + " NAME=token:<blockSize>");
          }
          builder.model(m.substring(0, eq), ModelKeys.parse(m.substring(eq + 1)));
          models.add(m.substring(0, eq));
        });
    v.apply(
        EppSetting.SHARED.defaultKeys,
        k -> {
          builder.defaultModelKeys(ModelKeys.parse(k));
          anyModel[0] = true;
        });
  }

  private static void adapter(String spec, Map<String, String> adapters) {
    int eq = spec.indexOf('=');
    if (eq <= 0 || eq == spec.length() - 1) {
      throw new IllegalArgumentException(
          "'"
              + spec
              + "' is malformed; expected ADAPTER=BASE_MODEL, for example"
              + " sql-lora=Qwen/Qwen3-8B");
    }
    adapters.put(spec.substring(0, eq), spec.substring(eq + 1));
  }

  private static CandidateSpec candidates(SettingValues v) {
    String pool = v.value(EppSetting.POOL_NAME.setting);
    List<Endpoint> fixed = new ArrayList<>();
    v.apply(EppSetting.ENDPOINT.setting, e -> fixed.add(endpoint(e)));
    String podName = v.value(EppSetting.POD_NAME.setting).trim().toLowerCase(Locale.ROOT);
    if (!podName.equals("name") && !podName.equals("ip")) {
      throw new IllegalArgumentException(
          "setting "
              + EppSetting.POD_NAME.setting.describe()
              + " must be name or ip, got '"
              + podName
              + "'");
    }
    if ((pool == null) == fixed.isEmpty()) {
      throw new IllegalArgumentException(
          "give the candidates either as an InferencePool ("
              + EppSetting.POOL_NAME.setting.describe()
              + ") or as endpoints ("
              + EppSetting.ENDPOINT.setting.describe()
              + "), not both and not neither");
    }
    return new CandidateSpec(
        pool, v.value(EppSetting.POOL_NAMESPACE.setting), podName.equals("ip"), fixed);
  }

  /** {@code POD=HOST:PORT}. */
  static Endpoint endpoint(String spec) {
    int eq = spec.indexOf('=');
    if (eq <= 0) {
      throw new IllegalArgumentException(
          "endpoint '" + spec + "' is malformed; expected POD=HOST:PORT, e.g. pod-0=10.0.0.5:8000");
    }
    InetSocketAddress a = address(spec.substring(eq + 1));
    return Endpoint.of(spec.substring(0, eq), a.getHostString(), a.getPort());
  }

  private static void refuseOpenBeyondLoopback(EppConfig config, boolean insecure) {
    InetSocketAddress listen = config.listen();
    boolean loopback = listen.getAddress() != null && listen.getAddress().isLoopbackAddress();
    if (!loopback && config.authToken() == null && !insecure) {
      throw new IllegalArgumentException(
          "the picker would serve ext_proc on "
              + listen.getHostString()
              + ":"
              + listen.getPort()
              + ", which is not a loopback address, without an auth token: what the proxy"
              + " reports on its streams feeds the closed loop, which changes what the index"
              + " credits a pod with. Give "
              + EppSetting.AUTH_TOKEN_FILE.setting.describe()
              + ", or "
              + EppSetting.INSECURE_NO_AUTH.setting.describe()
              + " behind a network policy that lets only the gateway reach the port");
    }
  }

  private int serve(Service service, PrometheusMeterRegistry registry) throws IOException {
    CountDownLatch closed = new CountDownLatch(1);
    Thread hook = new Thread(() -> stopAndWait(closed, service.config()), "kvindex-epp-stop");
    try (KvRouter router = service.router().build();
        EppServer server =
            EppServer.start(service.config(), router, candidates(service, registry), registry)) {
      PrintWriter out = spec.commandLine().getOut();
      InetSocketAddress grpc = server.address();
      InetSocketAddress http = server.metricsAddress();
      out.println(
          "kvindex epp serving ext_proc on "
              + grpc.getHostString()
              + ":"
              + grpc.getPort()
              + ", metrics on http://"
              + http.getHostString()
              + ":"
              + http.getPort());
      out.flush();
      Runtime.getRuntime().addShutdownHook(hook);
      stop.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      closed.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException | IllegalArgumentException e) {
        // the JVM is shutting down (the hook is running), or the hook was never added
      }
    }
    return 0;
  }

  private static Candidates candidates(Service service, PrometheusMeterRegistry registry) {
    CandidateSpec c = service.candidates();
    if (c.pool() == null) {
      return Candidates.of(c.fixed());
    }
    return InferencePoolCandidates.connect(
        Config.autoConfigure(null), c.namespace(), c.pool(), c.podNameIsIp(), registry);
  }

  /** On SIGTERM: lets {@link #serve} drain the streams, for up to the grace period and 5 s. */
  private void stopAndWait(CountDownLatch closed, EppConfig config) {
    stop.countDown();
    try {
      closed.await(config.shutdownGrace().toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static InetSocketAddress address(String hostPort) {
    String s = hostPort.trim();
    int colon = s.lastIndexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("'" + hostPort + "' must be HOST:PORT");
    }
    String host = s.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    try {
      return new InetSocketAddress(host, Integer.parseInt(s.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("'" + hostPort + "' must be HOST:PORT", e);
    }
  }
}
