package io.kvindex.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.kvindex.common.Check;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * How the picker runs; every default is documented once, in docs/configuration.md. Immutable, so
 * thread-safe.
 *
 * @param listen the gRPC address (ext_proc and gRPC health)
 * @param metricsListen the HTTP address of {@code /metrics}, {@code /healthz}, {@code /readyz}
 * @param threads the threads that run streams (a pick blocks one for its Redis read and, for text
 *     and chat prompts, the engine's {@code /tokenize})
 * @param maxBodyBytes the largest request body read; a larger one is refused with 413
 * @param fallbacks how many endpoints follow the pick in the destination list
 * @param routeTtl how long a pick counts in the index as a speculative route; zero: not recorded
 * @param answeredRouteTtl how long the route still counts once the engine has answered the request
 *     (the time its events take to reach the index), at most {@code routeTtl}; zero: it ends then
 * @param tokenizeTimeout the longest an engine's {@code /tokenize} may take before the request is
 *     picked by load
 * @param scrapeInterval how often the engines' {@code /metrics} are read; zero: never
 * @param scrapeTimeout the longest one scrape may take
 * @param scrapeStaleness figures older than this count as unknown
 * @param queueThreshold waiting requests at which an engine counts as saturated
 * @param kvCacheThreshold KV-cache usage at which an engine counts as saturated
 * @param waitingRequestTokens prompt tokens counted queued for each request an engine reports
 *     waiting that this picker did not send (its prompt is unknown here)
 * @param assumedModes the body modes of a proxy that does not say ({@code protocol_config})
 * @param sheddableObjectives inference objectives whose requests are shed (429) when saturated
 * @param models which models the index keys, and the LoRA adapters' base models
 * @param authToken the secret ext_proc streams must carry, or null for none
 * @param shutdownGrace how long open streams may take to finish on shutdown
 */
public record EppConfig(
    InetSocketAddress listen,
    InetSocketAddress metricsListen,
    int threads,
    int maxBodyBytes,
    int fallbacks,
    Duration routeTtl,
    Duration answeredRouteTtl,
    Duration tokenizeTimeout,
    Duration scrapeInterval,
    Duration scrapeTimeout,
    Duration scrapeStaleness,
    double queueThreshold,
    double kvCacheThreshold,
    double waitingRequestTokens,
    Modes assumedModes,
    Set<String> sheddableObjectives,
    ModelMap models,
    String authToken,
    Duration shutdownGrace) {

  static final int DEFAULT_PORT = 9002;
  static final int DEFAULT_METRICS_PORT = 9090;
  static final int DEFAULT_THREADS = 16;
  static final int DEFAULT_MAX_BODY_BYTES = 8 << 20;
  static final int DEFAULT_FALLBACKS = 2;
  static final Duration DEFAULT_ROUTE_TTL = Duration.ofSeconds(2);
  static final Duration DEFAULT_ANSWERED_ROUTE_TTL = Duration.ofMillis(500);
  static final Duration DEFAULT_TOKENIZE_TIMEOUT = Duration.ofMillis(150);
  static final Duration DEFAULT_SCRAPE_INTERVAL = Duration.ofMillis(200);
  static final Duration DEFAULT_SCRAPE_TIMEOUT = Duration.ofSeconds(1);
  static final Duration DEFAULT_SCRAPE_STALENESS = Duration.ofSeconds(2);
  static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(20);

  public EppConfig {
    Check.notNull(listen, "listen");
    Check.notNull(metricsListen, "metricsListen");
    Check.atLeast(threads, 1, "threads");
    Check.atLeast(maxBodyBytes, 1, "maxBodyBytes");
    Check.between(fallbacks, 0, 16, "fallbacks");
    Check.notNull(routeTtl, "routeTtl");
    Check.notNull(answeredRouteTtl, "answeredRouteTtl");
    Check.atLeastOneMilli(tokenizeTimeout, "tokenizeTimeout");
    Check.notNull(scrapeInterval, "scrapeInterval");
    Check.atLeastOneMilli(scrapeTimeout, "scrapeTimeout");
    Check.atLeastOneMilli(scrapeStaleness, "scrapeStaleness");
    Check.atLeast(queueThreshold, Double.MIN_VALUE, "queueThreshold");
    Check.between(kvCacheThreshold, Double.MIN_VALUE, 1.0, "kvCacheThreshold");
    Check.atLeast(waitingRequestTokens, 0.0, "waitingRequestTokens");
    Check.notNull(assumedModes, "assumedModes");
    sheddableObjectives = Set.copyOf(sheddableObjectives);
    Check.notNull(models, "models");
    Check.notNull(shutdownGrace, "shutdownGrace");
    if (routeTtl.isNegative()
        || answeredRouteTtl.isNegative()
        || scrapeInterval.isNegative()
        || shutdownGrace.isNegative()) {
      throw new IllegalArgumentException("durations must not be negative");
    }
  }

  /** The defaults, serving on loopback, for a router keyed as {@code models} says. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link EppConfig}; each value is checked when built. Not thread-safe. */
  public static final class Builder {
    private InetSocketAddress listen = new InetSocketAddress("127.0.0.1", DEFAULT_PORT);
    private InetSocketAddress metricsListen =
        new InetSocketAddress("127.0.0.1", DEFAULT_METRICS_PORT);
    private int threads = DEFAULT_THREADS;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int fallbacks = DEFAULT_FALLBACKS;
    private Duration routeTtl = DEFAULT_ROUTE_TTL;
    private Duration answeredRouteTtl = DEFAULT_ANSWERED_ROUTE_TTL;
    private Duration tokenizeTimeout = DEFAULT_TOKENIZE_TIMEOUT;
    private Duration scrapeInterval = DEFAULT_SCRAPE_INTERVAL;
    private Duration scrapeTimeout = DEFAULT_SCRAPE_TIMEOUT;
    private Duration scrapeStaleness = DEFAULT_SCRAPE_STALENESS;
    private double queueThreshold = LoadBook.DEFAULT_QUEUE_THRESHOLD;
    private double kvCacheThreshold = LoadBook.DEFAULT_KV_THRESHOLD;
    private double waitingRequestTokens = LoadBook.DEFAULT_WAITING_REQUEST_TOKENS;
    private Modes assumedModes =
        new Modes(BodySendMode.FULL_DUPLEX_STREAMED, BodySendMode.FULL_DUPLEX_STREAMED, true);
    private Set<String> sheddableObjectives = Set.of();
    private ModelMap models = new ModelMap(Set.of(), true, Map.of());
    private String authToken;
    private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;

    public Builder listen(InetSocketAddress v) {
      listen = v;
      return this;
    }

    public Builder metricsListen(InetSocketAddress v) {
      metricsListen = v;
      return this;
    }

    public Builder threads(int v) {
      threads = v;
      return this;
    }

    public Builder maxBodyBytes(int v) {
      maxBodyBytes = v;
      return this;
    }

    public Builder fallbacks(int v) {
      fallbacks = v;
      return this;
    }

    public Builder routeTtl(Duration v) {
      routeTtl = v;
      return this;
    }

    public Builder answeredRouteTtl(Duration v) {
      answeredRouteTtl = v;
      return this;
    }

    public Builder tokenizeTimeout(Duration v) {
      tokenizeTimeout = v;
      return this;
    }

    public Builder scrapeInterval(Duration v) {
      scrapeInterval = v;
      return this;
    }

    public Builder scrapeTimeout(Duration v) {
      scrapeTimeout = v;
      return this;
    }

    public Builder scrapeStaleness(Duration v) {
      scrapeStaleness = v;
      return this;
    }

    public Builder queueThreshold(double v) {
      queueThreshold = v;
      return this;
    }

    public Builder kvCacheThreshold(double v) {
      kvCacheThreshold = v;
      return this;
    }

    public Builder waitingRequestTokens(double v) {
      waitingRequestTokens = v;
      return this;
    }

    /** The body modes assumed of a proxy that sends no {@code protocol_config}. */
    public Builder assumedBodyModes(BodySendMode request, BodySendMode response) {
      assumedModes = new Modes(request, response, request == BodySendMode.FULL_DUPLEX_STREAMED);
      return this;
    }

    public Builder sheddableObjectives(Set<String> v) {
      sheddableObjectives = v;
      return this;
    }

    /**
     * The models the router keys ({@code anyModel}: it has default keys) and the LoRA adapters'
     * base models (adapter → base).
     */
    public Builder models(Set<String> models, boolean anyModel, Map<String, String> adapters) {
      this.models = new ModelMap(models, anyModel, adapters);
      return this;
    }

    public Builder authToken(String v) {
      authToken = v == null ? null : Check.notBlank(v, "authToken");
      return this;
    }

    public Builder shutdownGrace(Duration v) {
      shutdownGrace = v;
      return this;
    }

    public EppConfig build() {
      return new EppConfig(
          listen,
          metricsListen,
          threads,
          maxBodyBytes,
          fallbacks,
          routeTtl,
          answeredRouteTtl,
          tokenizeTimeout,
          scrapeInterval,
          scrapeTimeout,
          scrapeStaleness,
          queueThreshold,
          kvCacheThreshold,
          waitingRequestTokens,
          assumedModes,
          sheddableObjectives,
          models,
          authToken,
          shutdownGrace);
    }
  }
}
