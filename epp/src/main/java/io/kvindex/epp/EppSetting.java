package io.kvindex.epp;

import io.kvindex.service.Durations;
import io.kvindex.service.RouterSettings;
import io.kvindex.service.Setting;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every setting of {@code kvindex epp}, declared once: key, flag, environment variable, file key,
 * default and description. The router library's defaults come from its own constants.
 */
enum EppSetting {
  LISTEN(
      Setting.of(
          "listen",
          "127.0.0.1:" + EppConfig.DEFAULT_PORT,
          "HOST:PORT",
          "gRPC address of the ext_proc service and gRPC health checking (port 0 picks a free"
              + " one)")),
  METRICS_LISTEN(
      Setting.of(
          "metrics-listen",
          "127.0.0.1:" + EppConfig.DEFAULT_METRICS_PORT,
          "HOST:PORT",
          "HTTP address of /metrics, /healthz and /readyz")),
  POOL_NAME(
      Setting.optional(
          "pool-name",
          "none: the static --endpoint list",
          "NAME",
          "The InferencePool (inference.networking.k8s.io/v1) whose ready pods are the"
              + " candidates, watched through the API server")),
  POOL_NAMESPACE(
      Setting.optional(
          "pool-namespace",
          "the picker's own namespace",
          "NAMESPACE",
          "Namespace of the InferencePool and its pods")),
  POD_NAME(
      Setting.of(
          "pod-name",
          "name",
          "name|ip",
          "What names a pool's pod in the index, as the ingesters' --kubernetes-pod-name: its"
              + " name or its IP")),
  ENDPOINT(
      Setting.optional(
              "endpoint",
              "none",
              "POD=HOST:PORT",
              "A candidate endpoint for runs without Kubernetes, its pod named as the ingesters"
                  + " name it; repeatable (comma-separated in the environment)")
          .repeatable(",")),
  LORA_ADAPTER(
      Setting.optional(
              "lora-adapter",
              "none",
              "ADAPTER=BASE",
              "A LoRA adapter the engines serve under its own name (vLLM --lora-modules), and"
                  + " its base model; repeatable (comma-separated in the environment)")
          .repeatable(",")),
  FALLBACKS(
      Setting.of(
          "fallbacks",
          Integer.toString(EppConfig.DEFAULT_FALLBACKS),
          "N",
          "Endpoints listed after the pick, the policy's next choices, for a proxy that retries"
              + " (0 to 16)")),
  ROUTE_TTL(
      Setting.of(
          "route-ttl",
          Durations.format(EppConfig.DEFAULT_ROUTE_TTL),
          "DURATION",
          "How long a pick counts in the index as a speculative route, until the engine reports"
              + " the blocks; 0: picks are not recorded")),
  ANSWERED_ROUTE_TTL(
      Setting.of(
          "answered-route-ttl",
          Durations.format(EppConfig.DEFAULT_ANSWERED_ROUTE_TTL),
          "DURATION",
          "How long a pick's route still counts once its engine has answered (the time the"
              + " engine's events take to reach the index; the index's own entries count from"
              + " then on, evictions included), at most --route-ttl; 0: the route ends with the"
              + " answer")),
  TOKENIZE_TIMEOUT(
      Setting.of(
          "tokenize-timeout",
          Durations.format(EppConfig.DEFAULT_TOKENIZE_TIMEOUT),
          "DURATION",
          "Longest an engine's POST /tokenize of a text or chat prompt may take; past it the"
              + " request is picked by load. Keep it under the proxy's message timeout")),
  SCRAPE_INTERVAL(
      Setting.of(
          "scrape-interval",
          Durations.format(EppConfig.DEFAULT_SCRAPE_INTERVAL),
          "DURATION",
          "How often each candidate engine's /metrics is read (waiting and running requests, KV"
              + " cache usage); 0: never, the picker's own counts alone")),
  SCRAPE_TIMEOUT(
      Setting.of(
          "scrape-timeout",
          Durations.format(EppConfig.DEFAULT_SCRAPE_TIMEOUT),
          "DURATION",
          "Longest one /metrics scrape may take")),
  SCRAPE_STALENESS(
      Setting.of(
          "scrape-staleness",
          Durations.format(EppConfig.DEFAULT_SCRAPE_STALENESS),
          "DURATION",
          "An engine's figures older than this count as unknown (saturated, for shedding)")),
  QUEUE_THRESHOLD(
      Setting.of(
          "queue-threshold",
          number(LoadBook.DEFAULT_QUEUE_THRESHOLD),
          "N",
          "Waiting requests at which an engine counts as saturated")),
  KV_CACHE_THRESHOLD(
      Setting.of(
          "kv-cache-threshold",
          number(LoadBook.DEFAULT_KV_THRESHOLD),
          "SHARE",
          "KV-cache usage at which an engine counts as saturated, in (0, 1]")),
  WAITING_REQUEST_TOKENS(
      Setting.of(
          "waiting-request-tokens",
          number(LoadBook.DEFAULT_WAITING_REQUEST_TOKENS),
          "N",
          "Prompt tokens the time-aware pick policy counts queued for each request an engine"
              + " reports waiting that this picker did not send")),
  SHEDDABLE_OBJECTIVES(
      Setting.optional(
              "sheddable-objective",
              "none: nothing is shed",
              "NAME",
              "An inference objective (header x-gateway-inference-objective) whose requests are"
                  + " answered 429 while the candidates are saturated; repeatable")
          .repeatable(",")),
  BODY_MODES(
      Setting.of(
          "assumed-body-mode",
          "FULL_DUPLEX_STREAMED",
          "MODE",
          "The request and response body mode of a proxy that does not send protocol_config"
              + " (Envoy before 1.33): FULL_DUPLEX_STREAMED, STREAMED, BUFFERED or NONE")),
  THREADS(
      Setting.of(
          "threads",
          Integer.toString(EppConfig.DEFAULT_THREADS),
          "N",
          "Threads for the engines' POST /tokenize answers and the picks made from them"
              + " (streams run on the gRPC transport's threads; no pick holds a thread while it"
              + " waits)")),
  MAX_BODY_BYTES(
      Setting.of(
          "max-body-bytes",
          "8MiB",
          "SIZE",
          "Largest request body the picker reads; a larger one is answered 413")),
  AUTH_TOKEN_FILE(
      Setting.optional(
          "auth-token-file",
          "none: no authentication (refused beyond loopback, see --insecure-no-auth)",
          "FILE",
          "File holding a shared secret (trimmed); every ext_proc stream must then carry"
              + " 'authorization: Bearer <secret>' (Envoy: grpc_service initial_metadata), else"
              + " UNAUTHENTICATED. Required when --listen is not a loopback address")),
  INSECURE_NO_AUTH(
      Setting.of(
          "insecure-no-auth",
          "false",
          "true|false",
          "Serve ext_proc without --auth-token-file beyond loopback: anyone who reaches the port"
              + " may report responses that feed the closed loop. Only behind a network policy"
              + " that lets the gateway alone reach it")),
  SHUTDOWN_GRACE(
      Setting.of(
          "shutdown-grace",
          Durations.format(EppConfig.DEFAULT_SHUTDOWN_GRACE),
          "DURATION",
          "On SIGTERM, how long open streams may take to finish once health says NOT_SERVING"));

  /** The settings shared with {@code kvindex router}: the index, the models, the pick, the loop. */
  static final RouterSettings SHARED =
      new RouterSettings(
          "requests for other models are picked by load",
          "the request is picked by load",
          "Share a load view with every picker and router of the fleet through the index: each"
              + " pick counted from the pick to the response's end, its uncached prompt tokens"
              + " until the first token, and picks weigh every replica's counts instead of this"
              + " picker's own and the engines' scraped figures (which still decide shedding)");

  final Setting setting;

  EppSetting(Setting setting) {
    this.setting = setting;
  }

  /** Every declaration, the shared ones after the candidates'. */
  static List<Setting> all() {
    List<Setting> own = Arrays.stream(values()).map(s -> s.setting).toList();
    int at = own.indexOf(LORA_ADAPTER.setting);
    return Stream.of(own.subList(0, at), SHARED.all(), own.subList(at, own.size()))
        .flatMap(List::stream)
        .toList();
  }

  private static String number(double value) {
    return RouterSettings.number(value);
  }
}
