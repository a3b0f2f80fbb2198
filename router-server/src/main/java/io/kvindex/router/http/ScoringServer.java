package io.kvindex.router.http;

import io.kvindex.common.Check;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.Lookups;
import io.kvindex.router.KvRouter;
import io.kvindex.service.HttpService;
import io.kvindex.service.HttpService.Probe;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * The HTTP scoring service for gateways not on the JVM: {@code POST /score}, {@code POST /query}
 * (Dynamo and Mooncake indexer style), {@code POST /observe} (what the engine reported for a routed
 * request, {@link ObserveRequests}), and the service endpoint's {@code GET /metrics}, {@code
 * /healthz} and {@code /readyz} (ready while Redis answers a ping within a second). Thread-safe.
 *
 * <p>Every request is bounded ({@link Builder}): its body, its tokens, block keys and candidates,
 * the length of the names in it, and how long a route it records lives; each limit's refusal names
 * the setting that raises it. With an auth token, every route but the probes (and, unless asked,
 * {@code /metrics}) needs {@code Authorization: Bearer <token>}. Authentication fails closed: a
 * server on an address other than loopback refuses to start without a token, unless told {@link
 * Builder#insecureNoAuth} (what it serves records routes and observations that change what the
 * index credits a pod with).
 *
 * <p>Errors are {@code {"error": "..."}}: 400 for bad input (a name or {@code record_ttl_ms} over
 * its limit included), 401 without the token, 404 for an unknown route, 405 for a wrong method, 413
 * for a body, a prompt or a candidate list over its limit, 503 when the index is unavailable, 500
 * for errors retrying cannot fix.
 */
public final class ScoringServer implements AutoCloseable {
  /** The default of {@link Builder#maxBodyBytes}: 8 MiB, about a million token ids. */
  public static final int DEFAULT_MAX_BODY_BYTES = 8 << 20;

  /** The default of {@link Builder#maxTokens}: 256 Ki, the longest contexts served today. */
  public static final int DEFAULT_MAX_TOKENS = 1 << 18;

  /** The default of {@link Builder#maxBlockKeys}: the default tokens in blocks of 16. */
  public static final int DEFAULT_MAX_BLOCK_KEYS = 1 << 14;

  /** The default of {@link Builder#maxCandidates}. */
  public static final int DEFAULT_MAX_CANDIDATES = 1024;

  /** The default of {@link Builder#maxNameBytes}. */
  public static final int DEFAULT_MAX_NAME_BYTES = 512;

  /** The default of {@link Builder#maxRecordTtl}. */
  public static final Duration DEFAULT_MAX_RECORD_TTL = Duration.ofSeconds(30);

  /** The default of {@link Builder#address}. */
  public static final InetSocketAddress DEFAULT_ADDRESS = new InetSocketAddress("127.0.0.1", 8190);

  /** The default of {@link Builder#threads}. */
  public static final int DEFAULT_THREADS = 8;

  private final HttpService http;

  private ScoringServer(HttpService http) {
    this.http = http;
  }

  /** A builder with the defaults of docs/configuration.md (Router). */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts serving {@code router} on {@code address} (port 0 picks a free port) with the default
   * limits, no auth token and the default timeouts.
   *
   * @throws IOException if the address cannot be bound
   */
  public static ScoringServer start(
      KvRouter router, PrometheusMeterRegistry registry, InetSocketAddress address, int threads)
      throws IOException {
    return builder().address(address).threads(threads).start(router, registry);
  }

  /** The bound address (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return http.address();
  }

  /** Stops accepting, lets running requests finish for up to a second, then stops. */
  @Override
  public void close() {
    http.close(1);
  }

  /** Whether the server would be reachable only from this host. */
  private static boolean loopback(InetSocketAddress address) {
    return address.getAddress() != null && address.getAddress().isLoopbackAddress();
  }

  private static String setBy(RouterSetting setting) {
    return setting.setting.describe();
  }

  /** What one server is told; the auth token never appears in {@link #toString()}. */
  record Config(
      InetSocketAddress address,
      int threads,
      int maxBodyBytes,
      Limits limits,
      String authToken,
      boolean authMetrics,
      Duration readTimeout,
      Duration idleTimeout) {
    @Override
    public String toString() {
      return "Config[address="
          + address
          + ", threads="
          + threads
          + ", maxBodyBytes="
          + maxBodyBytes
          + ", limits="
          + limits
          + ", authToken="
          + (authToken == null ? "none" : "(set)")
          + ", authMetrics="
          + authMetrics
          + ", readTimeout="
          + readTimeout
          + ", idleTimeout="
          + idleTimeout
          + "]";
    }
  }

  /**
   * Configures a {@link ScoringServer}; each setter checks its argument at once. Not thread-safe.
   */
  public static final class Builder {
    private InetSocketAddress address = DEFAULT_ADDRESS;
    private int threads = DEFAULT_THREADS;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxTokens = DEFAULT_MAX_TOKENS;
    private int maxBlockKeys = DEFAULT_MAX_BLOCK_KEYS;
    private int maxCandidates = DEFAULT_MAX_CANDIDATES;
    private int maxNameBytes = DEFAULT_MAX_NAME_BYTES;
    private Duration maxRecordTtl = DEFAULT_MAX_RECORD_TTL;
    private String authToken;
    private boolean authMetrics;
    private boolean insecureNoAuth;
    private Duration readTimeout = HttpService.DEFAULT_READ_TIMEOUT;
    private Duration idleTimeout = HttpService.DEFAULT_IDLE_TIMEOUT;

    private Builder() {}

    /** Where to listen; port 0 picks a free one. Default 127.0.0.1:8190. */
    public Builder address(InetSocketAddress address) {
      this.address = Check.notNull(address, "address");
      return this;
    }

    /**
     * Request threads; requests beyond them queue (up to 1024 per thread), then run on the
     * accepting thread, which slows accepting down. Default 8.
     */
    public Builder threads(int threads) {
      this.threads = Check.atLeast(threads, 1, "threads");
      return this;
    }

    /** The largest request body, in bytes (413 beyond it). Default 8 MiB. */
    public Builder maxBodyBytes(int bytes) {
      this.maxBodyBytes = Check.atLeast(bytes, 1, "maxBodyBytes");
      return this;
    }

    /** The most token ids one request may carry (413 beyond it). Default 262 144. */
    public Builder maxTokens(int tokens) {
      this.maxTokens = Check.atLeast(tokens, 1, "maxTokens");
      return this;
    }

    /**
     * The most block keys one request may carry (413 beyond it), and the most blocks one {@code
     * /score} records as a speculative route (the prompt's first ones). Default 16 384.
     */
    public Builder maxBlockKeys(int keys) {
      this.maxBlockKeys = Check.atLeast(keys, 1, "maxBlockKeys");
      return this;
    }

    /**
     * The most candidate pods one request may name (413 beyond it), at most the index's {@value
     * LookupRequest#MAX_CANDIDATES}. Default 1024.
     */
    public Builder maxCandidates(int pods) {
      this.maxCandidates = Check.between(pods, 1, LookupRequest.MAX_CANDIDATES, "maxCandidates");
      return this;
    }

    /**
     * The longest model, LoRA or pod name a request may carry, in UTF-8 bytes (400 beyond it): the
     * router caches per (model, pod), so this bounds what those entries hold. At most the index's
     * {@value Check#MAX_NAME_BYTES}. Default 512.
     */
    public Builder maxNameBytes(int bytes) {
      this.maxNameBytes = Check.between(bytes, 1, Check.MAX_NAME_BYTES, "maxNameBytes");
      return this;
    }

    /**
     * The longest {@code record_ttl_ms} a {@code /score} may ask (400 beyond it), at most {@link
     * Lookups#MAX_SPECULATIVE_TTL} (one minute). Default 30 s.
     */
    public Builder maxRecordTtl(Duration ttl) {
      this.maxRecordTtl = Lookups.checkSpeculativeTtl(ttl, "maxRecordTtl");
      return this;
    }

    /**
     * The shared secret of {@link HttpService.Builder#authToken}: every route but {@code /healthz}
     * and {@code /readyz} (and {@code /metrics}, unless {@link #authMetrics}) needs {@code
     * Authorization: Bearer <token>}. Default none: open.
     */
    public Builder authToken(String token) {
      this.authToken = Check.notBlank(token, "authToken");
      return this;
    }

    /** Whether {@code /metrics} needs the {@link #authToken} too. Default false. */
    public Builder authMetrics(boolean required) {
      this.authMetrics = required;
      return this;
    }

    /**
     * Whether to serve without an {@link #authToken} on an address other than loopback, where
     * anyone who reaches the port may score, record routes and report observations (which start and
     * feed the inference of a pod's evictions). Only for a network every client of which is
     * trusted; on loopback no token is needed. Default false: such a server refuses to start.
     */
    public Builder insecureNoAuth(boolean insecure) {
      this.insecureNoAuth = insecure;
      return this;
    }

    /** {@link HttpService.Builder#readTimeout}: whole seconds, process-wide. Default 10 s. */
    public Builder readTimeout(Duration timeout) {
      this.readTimeout = HttpService.checkTimeout(timeout, "readTimeout");
      return this;
    }

    /** {@link HttpService.Builder#idleTimeout}: whole seconds, process-wide. Default 30 s. */
    public Builder idleTimeout(Duration timeout) {
      this.idleTimeout = HttpService.checkTimeout(timeout, "idleTimeout");
      return this;
    }

    Config config() {
      if (authMetrics && authToken == null) {
        throw new IllegalArgumentException("authMetrics(true) needs an authToken");
      }
      if (authToken != null && insecureNoAuth) {
        throw new IllegalArgumentException(
            "both an auth token and "
                + setBy(RouterSetting.INSECURE_NO_AUTH)
                + " are set: choose one (the token, unless every client of the network is"
                + " trusted)");
      }
      if (authToken == null && !insecureNoAuth && !loopback(address)) {
        throw new IllegalArgumentException(
            "the router would listen on "
                + address.getHostString()
                + ":"
                + address.getPort()
                + ", which is not a loopback address, without an auth token: anyone who reaches"
                + " it could record routes and report observations that change what the index"
                + " credits a pod with. Put a shared secret in a file and set "
                + setBy(RouterSetting.AUTH_TOKEN_FILE)
                + " (clients then send 'Authorization: Bearer <secret>'), or listen on"
                + " 127.0.0.1, or, only on a network where every client is trusted, set "
                + setBy(RouterSetting.INSECURE_NO_AUTH));
      }
      return new Config(
          address,
          threads,
          maxBodyBytes,
          new Limits(maxTokens, maxBlockKeys, maxCandidates, maxNameBytes, maxRecordTtl),
          authToken,
          authMetrics,
          readTimeout,
          idleTimeout);
    }

    /**
     * Starts serving {@code router}, its meters (and the index's) on {@code /metrics}.
     *
     * @throws IOException if the address cannot be bound
     * @throws IllegalStateException if an HTTP server of this process runs with other timeouts
     */
    public ScoringServer start(KvRouter router, PrometheusMeterRegistry registry)
        throws IOException {
      Check.notNull(router, "router");
      Check.notNull(registry, "registry");
      Config c = config();
      Routes routes = new Routes(router, c.limits());
      HttpService.Builder http =
          HttpService.builder("kvindex-router")
              .address(c.address())
              .threads(c.threads())
              .queue(1024 * c.threads())
              .maxBodyBytes(c.maxBodyBytes(), RouterSetting.MAX_BODY_BYTES.setting)
              .authMetrics(c.authMetrics())
              .readTimeout(c.readTimeout())
              .idleTimeout(c.idleTimeout())
              .metrics(registry::scrape)
              .ready(
                  () ->
                      router.indexReachable()
                          ? Probe.ok("ready")
                          : Probe.failing(
                              "not ready: Redis does not answer a ping within one second"))
              .fallback(routes::handle);
      if (c.authToken() != null) {
        http.authToken(c.authToken());
      }
      return new ScoringServer(http.start());
    }
  }
}
