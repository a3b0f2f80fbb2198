package io.kvindex.router.http;

import io.kvindex.index.LookupRequest;
import io.kvindex.router.KvRouterBuilder;
import io.kvindex.router.PickPolicy;
import io.kvindex.router.TtftCostModel;
import io.kvindex.service.Durations;
import io.kvindex.service.HttpService;
import io.kvindex.service.Setting;
import java.util.Arrays;
import java.util.List;

/**
 * Every setting of the router service, declared once: key, flag, environment variable, file key,
 * default and description. Library defaults come from the library's own constants.
 */
enum RouterSetting {
  LISTEN(
      Setting.of(
          "listen",
          ScoringServer.DEFAULT_ADDRESS.getHostString()
              + ":"
              + ScoringServer.DEFAULT_ADDRESS.getPort(),
          "HOST:PORT",
          "Address to serve on (port 0 picks a free one)")),
  REDIS_URI(
      Setting.of(
          "redis-uri",
          KvRouterBuilder.DEFAULT_REDIS_URI,
          "URI",
          "redis://[user:password@]host:port (rediss:// for TLS),"
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
              "Index name, as the ingesters use it")
          .flags("--index-name", "--index")),
  INDEX_GROUPS(Setting.of("index-groups", "1", "N", "Index groups, as the ingesters use them")),
  MODEL(
      Setting.optional(
              "model",
              "none",
              "NAME=KEYS",
              "A model's key mode, repeatable (comma-separated in the environment):"
                  + " NAME=engine:<algo>:<seed>:<blockSize> or NAME=token:<blockSize>, then"
                  + " :eagle when the engines run an EAGLE or MTP draft model")
          .repeatable(",")),
  DEFAULT_KEYS(
      Setting.optional(
          "default-keys",
          "none: unknown models are refused",
          "KEYS",
          "Key mode of models not named by --model")),
  ADOPT_ENGINE_KEYS(
      Setting.of(
          "adopt-engine-keys",
          "false",
          "BOOL",
          "Whether a model whose engines the ingesters' key check found hashing otherwise than"
              + " --model (or --default-keys) says is keyed as they hash (read again every 10s,"
              + " logged when it changes); false: the check only reports")),
  LOOKUP_BUDGET(
      Setting.of(
          "lookup-budget",
          Durations.format(KvRouterBuilder.DEFAULT_LOOKUP_BUDGET),
          "DURATION",
          "Longest time one lookup may take, retries included; past it the answer is 'index"
              + " unavailable'")),
  THREADS(
      Setting.of(
          "threads",
          Integer.toString(ScoringServer.DEFAULT_THREADS),
          "N",
          "Request threads (queue 1024 each; past it the accepting thread serves the request)")),
  MAX_BODY_BYTES(
      Setting.of(
          "max-body-bytes", "8MiB", "SIZE", "Largest request body; a larger one is answered 413")),
  MAX_TOKENS(
      Setting.of(
          "max-tokens",
          Integer.toString(ScoringServer.DEFAULT_MAX_TOKENS),
          "N",
          "Most token ids one request may carry; more are answered 413")),
  MAX_BLOCK_KEYS(
      Setting.of(
          "max-block-keys",
          Integer.toString(ScoringServer.DEFAULT_MAX_BLOCK_KEYS),
          "N",
          "Most block keys one request may carry (more: 413), and most blocks one /score records"
              + " as a speculative route (the prompt's first)")),
  MAX_CANDIDATES(
      Setting.of(
          "max-candidates",
          Integer.toString(ScoringServer.DEFAULT_MAX_CANDIDATES),
          "N",
          "Most candidate pods one request may name, at most "
              + LookupRequest.MAX_CANDIDATES
              + "; more are answered 413")),
  MAX_NAME_BYTES(
      Setting.of(
          "max-name-bytes",
          Integer.toString(ScoringServer.DEFAULT_MAX_NAME_BYTES),
          "BYTES",
          "Longest model, LoRA or pod name in a request (UTF-8); a longer one is answered 400")),
  MAX_RECORD_TTL(
      Setting.of(
          "max-record-ttl",
          Durations.format(ScoringServer.DEFAULT_MAX_RECORD_TTL),
          "DURATION",
          "Longest record_ttl_ms a /score may ask; a longer one is answered 400")),
  READ_TIMEOUT(
      Setting.of(
          "read-timeout",
          Durations.format(HttpService.DEFAULT_READ_TIMEOUT),
          "DURATION",
          "Longest a client may take to send its whole request, or to take in the answer; then"
              + " the connection is closed. Whole seconds; process-wide")),
  IDLE_TIMEOUT(
      Setting.of(
          "idle-timeout",
          Durations.format(HttpService.DEFAULT_IDLE_TIMEOUT),
          "DURATION",
          "An idle kept-alive connection is closed after this. Whole seconds; process-wide")),
  AUTH_TOKEN_FILE(
      Setting.optional(
          "auth-token-file",
          "none: no authentication (refused beyond loopback, see --insecure-no-auth)",
          "FILE",
          "File holding a shared secret (trimmed); every route but /healthz and /readyz then"
              + " needs 'Authorization: Bearer <secret>', else 401. Required when --listen is not"
              + " a loopback address")),
  INSECURE_NO_AUTH(
      Setting.of(
          "insecure-no-auth",
          "false",
          "true|false",
          "Serve without --auth-token-file on an address other than loopback: anyone who reaches"
              + " the port may record routes and report observations. Only for a network where"
              + " every client is trusted")),
  AUTH_METRICS(
      Setting.of(
          "auth-metrics",
          "false",
          "true|false",
          "Whether /metrics needs the --auth-token-file secret too")),
  PICK_POLICY(
      Setting.of(
          "pick-policy",
          PickPolicy.ESTIMATED_TTFT,
          "estimated-ttft|longest-prefix",
          "How a pod is picked: the least estimated time to first token (its uncached prompt"
              + " tokens plus the prompt tokens queued there, after the guard; see --ttft-cost), or"
              + " longest-prefix (the longest cached prefix among the pods the guard keeps, then"
              + " the least load)")),
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
          "Pick guard: load units above the least loaded pod")),
  IMBALANCE_RATIO(
      Setting.of(
          "imbalance-ratio",
          number(PickPolicy.DEFAULT_IMBALANCE_RATIO),
          "FACTOR",
          "Pick guard: factor over the least loaded pod")),
  DRIFT_WINDOW(
      Setting.of(
          "drift-window",
          Integer.toString(KvRouterBuilder.DEFAULT_DRIFT_WINDOW),
          "N",
          "A pod's latest requests observed through POST /observe that are judged together (4 to"
              + " 4096)")),
  DRIFT_THRESHOLD(
      Setting.of(
          "drift-threshold",
          number(KvRouterBuilder.DEFAULT_DRIFT_THRESHOLD),
          "SHARE",
          "Share of a full drift window over-predicted that makes a pod suspect and asks for its"
              + " resync (or under-predicted, reported only), in (0, 1]")),
  RESYNC_INTERVAL(
      Setting.of(
          "resync-interval",
          Durations.format(KvRouterBuilder.DEFAULT_RESYNC_INTERVAL),
          "DURATION",
          "A suspect pod is resynced at most once per interval, whichever router asks (its ingester"
              + " infers its engine's evictions from then on, or purges and replays its ring);"
              + " engine-keyed models only; 0 turns resyncs off"));

  final Setting setting;

  RouterSetting(Setting setting) {
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
