package io.kvindex.epp;

import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.TtftCostModel;
import io.kvindex.service.Durations;
import io.kvindex.service.Setting;
import java.util.Arrays;
import java.util.List;

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
  REDIS_URI(
      Setting.of(
          "redis-uri",
          KvRouterBuilder.DEFAULT_REDIS_URI,
          "URI",
          "The index's Redis: redis://[user:password@]host:port (rediss:// for TLS),"
              + " redis-cluster://host1:port1,host2:port2, or"
              + " redis-sentinel://[password@]s1:p1,s2:p2#master")),
  REDIS_TLS_CA_FILE(
      Setting.optional(
          "redis-tls-ca-file",
          "none: the JVM's trust store",
          "FILE",
          "PEM file of the CA certificates a rediss:// server's certificate is checked against")),
  CLUSTER_SEED(
      Setting.optional(
              "cluster-seed",
              "none",
              "URI",
              "A Redis Cluster seed node URI; repeat for more (comma-separated in the"
                  + " environment). Replaces --redis-uri")
          .repeatable(",")),
  INDEX_NAME(
      Setting.of(
          "index-name",
          KvRouterBuilder.DEFAULT_INDEX_NAME,
          "NAME",
          "Index name, as the ingesters use it")),
  INDEX_GROUPS(Setting.of("index-groups", "1", "N", "Index groups, as the ingesters use them")),
  MODEL(
      Setting.optional(
              "model",
              "none",
              "NAME=KEYS",
              "A model's key mode, repeatable (comma-separated in the environment):"
                  + " NAME=engine:<algo>[:<seed>]:<blockSize> or NAME=token:<blockSize>, then"
                  + " :eagle when the engines run an EAGLE or MTP draft model")
          .repeatable(",")),
  DEFAULT_KEYS(
      Setting.optional(
          "default-keys",
          "none: requests for other models are picked by load",
          "KEYS",
          "Key mode of models not named by --model")),
  LORA_ADAPTER(
      Setting.optional(
              "lora-adapter",
              "none",
              "ADAPTER=BASE",
              "A LoRA adapter the engines serve under its own name (vLLM --lora-modules), and"
                  + " its base model; repeatable (comma-separated in the environment)")
          .repeatable(",")),
  LOOKUP_BUDGET(
      Setting.of(
          "lookup-budget",
          Durations.format(KvRouterBuilder.DEFAULT_LOOKUP_BUDGET),
          "DURATION",
          "Longest time one index lookup may take, retries included; past it the request is"
              + " picked by load")),
  PICK_POLICY(
      Setting.of(
          "pick-policy",
          PickPolicy.ESTIMATED_TTFT,
          "estimated-ttft|longest-prefix",
          "How a endpoint is picked: the least estimated time to first token (its uncached prompt"
              + " tokens plus the prompt tokens queued there, after the guard; see --ttft-cost), or"
              + " longest-prefix (the longest cached prefix among the endpoints the guard keeps,"
              + " then the least load)")),
  TTFT_COST(
      Setting.of(
          "ttft-cost",
          TtftCostModel.DEFAULT.toString(),
          "STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD",
          "The estimated-ttft policy's cost model: seconds per engine step, seconds per prompt"
              + " token computed, prompt tokens per step at most (max_num_batched_tokens), and"
              + " prompt tokens counted queued per unit of load when the load carries no queued"
              + " tokens; defaults for Llama-3.1-8B-Instruct, BF16, one H100")),
  IMBALANCE_ABSOLUTE(
      Setting.of(
          "imbalance-absolute",
          number(PickPolicy.DEFAULT_IMBALANCE_ABSOLUTE),
          "LOAD",
          "Pick guard: load units above the least loaded endpoint")),
  IMBALANCE_RATIO(
      Setting.of(
          "imbalance-ratio",
          number(PickPolicy.DEFAULT_IMBALANCE_RATIO),
          "FACTOR",
          "Pick guard: factor over the least loaded endpoint")),
  DRIFT_WINDOW(
      Setting.of(
          "drift-window",
          Integer.toString(KvRouterBuilder.DEFAULT_DRIFT_WINDOW),
          "N",
          "A pod's latest observed responses that are judged together (4 to 4096)")),
  DRIFT_THRESHOLD(
      Setting.of(
          "drift-threshold",
          number(KvRouterBuilder.DEFAULT_DRIFT_THRESHOLD),
          "SHARE",
          "Share of a full drift window over-predicted that makes a pod suspect, in (0, 1]")),
  RESYNC_INTERVAL(
      Setting.of(
          "resync-interval",
          Durations.format(KvRouterBuilder.DEFAULT_RESYNC_INTERVAL),
          "DURATION",
          "A suspect pod is resynced at most once per interval, whichever picker or router asks;"
              + " 0 turns resyncs off")),
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

  final Setting setting;

  EppSetting(Setting setting) {
    this.setting = setting;
  }

  /** Every declaration, in order. */
  static List<Setting> all() {
    return Arrays.stream(values()).map(s -> s.setting).toList();
  }

  private static String number(double value) {
    return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
  }
}
