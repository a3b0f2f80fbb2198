package io.kvindex.epp;

import io.kvindex.common.Check;
import io.kvindex.common.Threads;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engines' own account of their load: every {@code interval}, a {@code GET /metrics} of each
 * candidate endpoint (vLLM serves it on its API port), read as {@link EngineStats}. Thread-safe.
 *
 * <p>Implementation notes. Scrapes run asynchronously on the JDK's HTTP client; an endpoint whose
 * previous scrape has not answered is skipped, so a hung engine holds one request at a time. A
 * failed scrape keeps the last figures, which age: {@link #stats} returns them with their time, and
 * the load book treats figures older than its staleness bound as unknown. Endpoints that left the
 * candidates are forgotten at the next round.
 */
final class EngineLoad implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EngineLoad.class);

  private final Candidates candidates;
  private final Duration timeout;
  private final LongSupplier nanos;
  private final HttpClient http;
  private final ScheduledExecutorService timer;
  private final Map<String, EngineStats> stats = new ConcurrentHashMap<>();
  private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
  private final Counter scraped;
  private final Counter failed;
  private volatile boolean failureLogged;

  private EngineLoad(
      Candidates candidates, Duration timeout, MeterRegistry registry, LongSupplier nanos) {
    this.candidates = candidates;
    this.timeout = timeout;
    this.nanos = nanos;
    this.timer = Threads.scheduled("kvindex-epp-scrape", 1);
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(timeout)
            .executor(timer)
            .build();
    this.scraped = outcome(registry, "ok");
    this.failed = outcome(registry, "failed");
  }

  /**
   * Scrapes the candidates' {@code /metrics} every {@code interval}, each scrape given {@code
   * timeout}.
   */
  static EngineLoad start(
      Candidates candidates, Duration interval, Duration timeout, MeterRegistry registry) {
    Check.atLeastOneMilli(interval, "interval");
    Check.atLeastOneMilli(timeout, "timeout");
    EngineLoad load = new EngineLoad(candidates, timeout, registry, System::nanoTime);
    load.timer.scheduleWithFixedDelay(load::round, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
    return load;
  }

  /** The last figures of the endpoint's engine, or null when it never answered. */
  EngineStats stats(String key) {
    return stats.get(key);
  }

  private void round() {
    try {
      List<Endpoint> now = candidates.endpoints();
      Set<String> keys = new HashSet<>();
      for (Endpoint e : now) {
        keys.add(e.key());
        if (inFlight.add(e.key())) {
          scrape(e);
        }
      }
      stats.keySet().retainAll(keys);
    } catch (RuntimeException e) {
      log.warn("engine metrics: a scrape round failed; the next one runs as planned", e);
    }
  }

  private void scrape(Endpoint e) {
    HttpRequest get =
        HttpRequest.newBuilder(URI.create("http://" + e.address() + "/metrics"))
            .timeout(timeout)
            .GET()
            .build();
    http.sendAsync(get, HttpResponse.BodyHandlers.ofString())
        .whenComplete(
            (response, error) -> {
              inFlight.remove(e.key());
              if (error == null && response.statusCode() == 200) {
                stats.put(e.key(), EngineStats.parse(response.body(), nanos.getAsLong()));
                scraped.increment();
                failureLogged = false;
              } else {
                failed.increment();
                if (!failureLogged) {
                  failureLogged = true;
                  log.warn(
                      "engine metrics: GET http://{}/metrics of {} failed ({}); its load counts"
                          + " as unknown until it answers",
                      e.address(),
                      e.key(),
                      error != null ? error.toString() : "HTTP " + response.statusCode());
                }
              }
            });
  }

  private static Counter outcome(MeterRegistry registry, String outcome) {
    return Counter.builder("kvindex.epp.engine.scrapes")
        .description("Scrapes of the candidate engines' /metrics, by outcome")
        .tag("outcome", outcome)
        .register(registry);
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
