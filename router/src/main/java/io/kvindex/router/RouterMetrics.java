package io.kvindex.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * The router's meters: {@code kvindex.router.lookup} (a latency timer with a histogram, tagged by
 * outcome: hit, miss, unavailable, error), {@code kvindex.router.unavailable} (lookups answered
 * "index unavailable") and {@code kvindex.router.speculative.writes} (tagged by outcome).
 * Thread-safe.
 */
final class RouterMetrics {
  private final Map<Scores.Outcome, Timer> lookups = new EnumMap<>(Scores.Outcome.class);
  private final Timer errors;
  private final Counter unavailable;
  private final Counter speculativeWritten;
  private final Counter speculativeFailed;

  RouterMetrics(MeterRegistry registry) {
    for (Scores.Outcome outcome : Scores.Outcome.values()) {
      lookups.put(outcome, lookupTimer(registry, outcome.name().toLowerCase(Locale.ROOT)));
    }
    errors = lookupTimer(registry, "error");
    unavailable =
        Counter.builder("kvindex.router.unavailable")
            .description("Lookups answered 'index unavailable' after the retry budget")
            .register(registry);
    speculativeWritten = speculativeCounter(registry, "written");
    speculativeFailed = speculativeCounter(registry, "failed");
  }

  private static Timer lookupTimer(MeterRegistry registry, String outcome) {
    return Timer.builder("kvindex.router.lookup")
        .description("Latency of KvRouter.score, key computation and retries included")
        .tag("outcome", outcome)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(50_000))
        .maximumExpectedValue(Duration.ofSeconds(1))
        .register(registry);
  }

  private static Counter speculativeCounter(MeterRegistry registry, String outcome) {
    return Counter.builder("kvindex.router.speculative.writes")
        .description("recordRoute calls by outcome")
        .tag("outcome", outcome)
        .register(registry);
  }

  void lookup(Scores.Outcome outcome, long nanos) {
    lookups.get(outcome).record(Duration.ofNanos(nanos));
    if (outcome == Scores.Outcome.UNAVAILABLE) {
      unavailable.increment();
    }
  }

  void lookupFailed(long nanos) {
    errors.record(Duration.ofNanos(nanos));
  }

  void speculative(boolean written) {
    (written ? speculativeWritten : speculativeFailed).increment();
  }
}
