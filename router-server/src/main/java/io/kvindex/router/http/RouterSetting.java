package io.kvindex.router.http;

import io.kvindex.index.LookupRequest;
import io.kvindex.service.Durations;
import io.kvindex.service.HttpService;
import io.kvindex.service.RouterSettings;
import io.kvindex.service.Setting;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every setting of the router service, declared once: key, flag, environment variable, file key,
 * default and description; those it shares with {@code kvindex epp} in {@link #SHARED}. Library
 * defaults come from the library's own constants.
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
  ADOPT_ENGINE_KEYS(
      Setting.of(
          "adopt-engine-keys",
          "false",
          "BOOL",
          "Whether a model whose engines the ingesters' key check found hashing otherwise than"
              + " --model (or --default-keys) says is keyed as they hash (read again every 10s,"
              + " logged when it changes); false: the check only reports")),
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
          "Whether /metrics needs the --auth-token-file secret too"));

  /** The settings shared with {@code kvindex epp}: the index, the models, the pick, the loop. */
  static final RouterSettings SHARED =
      new RouterSettings(
          "unknown models are refused",
          "the answer is 'index unavailable'",
          "Read the load view every router and picker of the fleet shares through the index and"
              + " add it to the pod loads each /score gives: what the fleet's endpoint pickers and"
              + " library routers counted. This service adds nothing to it: it does not see a"
              + " request's first token or end, so a gateway keeps passing its own load in"
              + " pod_loads");

  final Setting setting;

  RouterSetting(Setting setting) {
    this.setting = setting;
  }

  /** Every declaration, the shared ones first. */
  static List<Setting> all() {
    return Stream.concat(SHARED.all().stream(), Arrays.stream(values()).map(s -> s.setting))
        .toList();
  }
}
