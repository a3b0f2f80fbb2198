package io.kvindex.epp;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The picker's meters, every one named {@code kvindex_epp_...} in Prometheus's text. Thread-safe.
 */
final class EppMetrics {
  private final MeterRegistry registry;
  private final Timer pickAtHeaders;
  private final Timer pickAfterBody;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> tokenize = new ConcurrentHashMap<>();
  private final Map<String, Timer> steps = new ConcurrentHashMap<>();
  private final AtomicInteger open = new AtomicInteger();

  EppMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.pickAtHeaders = pickTimer(registry, "headers");
    this.pickAfterBody = pickTimer(registry, "body");
    Gauge.builder("kvindex.epp.streams.open", open, AtomicInteger::get)
        .description("External processing streams open now (one per HTTP request in flight)")
        .register(registry);
  }

  /**
   * The picker's own added latency: from the request-headers message in to the message carrying the
   * pick out, tagged by what the pick waited for ({@code headers}: picked at them, by load; {@code
   * body}: picked once the body had come, which includes the body's transfer).
   */
  private static Timer pickTimer(MeterRegistry registry, String at) {
    return Timer.builder("kvindex.epp.pick")
        .description(
            "The picker's own added latency: from the request-headers message in to the message"
                + " carrying the pick out, by what the pick waited for (headers, body)")
        .tag("at", at)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(50_000))
        .maximumExpectedValue(Duration.ofSeconds(1))
        .register(registry);
  }

  /** Gauges over the picker's state: its candidates and its own open requests. */
  void gauges(Supplier<Integer> candidates, Supplier<Integer> inFlight) {
    // Held strongly: nothing else holds the suppliers, and a gauge holds its object weakly.
    Gauge.builder("kvindex.epp.candidates", candidates, s -> s.get())
        .description("Candidate endpoints known now (ready pods times target ports)")
        .strongReference(true)
        .register(registry);
    Gauge.builder("kvindex.epp.in.flight", inFlight, s -> s.get())
        .description("Requests this picker sent that have not finished")
        .strongReference(true)
        .register(registry);
  }

  void streamOpened() {
    open.incrementAndGet();
  }

  /** A stream ended: {@code completed}, {@code cancelled} (closed midway) or {@code error}. */
  void streamClosed(String outcome) {
    open.decrementAndGet();
    count("kvindex.epp.streams", "Streams by how they ended", "outcome", outcome);
  }

  /**
   * A pick was sent, {@code nanos} after the request headers came; {@code afterBody}: it waited for
   * the body.
   */
  void picked(Decision d, boolean afterBody, long nanos) {
    (afterBody ? pickAfterBody : pickAtHeaders).record(nanos, TimeUnit.NANOSECONDS);
    String reason =
        d.unscored() != null ? "by_load" : d.pick().reason().name().toLowerCase(Locale.ROOT);
    count(
        "kvindex.epp.picks",
        "Requests given endpoints, by the step that decided",
        "reason",
        reason);
  }

  /**
   * One step of a pick, for where its time goes: {@code body_read} (the body's JSON), {@code score}
   * (hashing and the index's lookup), {@code pick} (the pick and its fallbacks), {@code answer}
   * (the answers sent: the pick, and the body passed back in full duplex).
   */
  void step(String step, long nanos) {
    Timer t = steps.get(step);
    if (t == null) {
      t =
          steps.computeIfAbsent(
              step,
              s ->
                  Timer.builder("kvindex.epp.pick.steps")
                      .description(
                          "The steps of the picks made from a request body: body_read, score, pick,"
                              + " answer")
                      .tag("step", s)
                      .register(registry));
    }
    t.record(nanos, TimeUnit.NANOSECONDS);
  }

  void refused(int status) {
    count(
        "kvindex.epp.refusals",
        "Requests refused with an immediate response, by HTTP status (503: no ready endpoint,"
            + " 429: shed, 413: body over the limit)",
        "status",
        Integer.toString(status));
  }

  void unscored(String reason) {
    count(
        "kvindex.epp.unscored",
        "Requests picked by load alone because they could not be scored, by reason",
        "reason",
        reason);
  }

  void tokenized(String outcome, long nanos) {
    tokenize
        .computeIfAbsent(
            outcome,
            o ->
                Timer.builder("kvindex.epp.tokenize")
                    .description("Calls of an engine's POST /tokenize for text and chat prompts")
                    .tag("outcome", o)
                    .publishPercentileHistogram()
                    .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Where the proxy said the request was served: {@code pick}, {@code fallback}, ... */
  void served(String which) {
    count(
        "kvindex.epp.served",
        "Responses by the endpoint the proxy reported serving them: the pick, a fallback, another"
            + " endpoint, or none reported",
        "endpoint",
        which);
  }

  /** What became of a response's usage: {@code observed}, {@code no_usage}, ... */
  void observation(String outcome) {
    count(
        "kvindex.epp.observations",
        "Responses by what their usage gave the closed loop",
        "outcome",
        outcome);
  }

  private void count(String name, String description, String tag, String value) {
    counters
        .computeIfAbsent(
            name + '\0' + value,
            k -> Counter.builder(name).description(description).tag(tag, value).register(registry))
        .increment();
  }
}
