package io.kvindex.demo;

import io.kvindex.common.KvIndexException;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Replays a run's requests through one routing policy on one fleet, at a paced rate (or as fast as
 * possible), firing the fault actions at their request indexes. Not thread-safe: one call at a
 * time.
 */
public final class Run {
  private static final long PROGRESS_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final List<InferenceRequest> requests;
  private final Fleet fleet;
  private final Policy policy;
  private final Map<Integer, Runnable> actions = new TreeMap<>();
  private final List<Timed> timed = new ArrayList<>();
  private double requestsPerSecond = Double.POSITIVE_INFINITY;
  private List<Duration> arrivals;
  private Duration limit;
  private Duration span;
  private Consumer<Result> progress = r -> {};

  Run(List<InferenceRequest> requests, Fleet fleet, Policy policy) {
    this.requests = List.copyOf(requests);
    this.fleet = fleet;
    this.policy = policy;
  }

  /** Paces the requests at this rate. Default as fast as possible. */
  Run pace(double requestsPerSecond) {
    this.requestsPerSecond = requestsPerSecond;
    return this;
  }

  /** Paces the requests at their arrival times, compressed {@code speed} times. */
  Run arrivals(List<Duration> arrivals, double speed) {
    this.arrivals =
        arrivals.stream().map(a -> Duration.ofNanos((long) (a.toNanos() / speed))).toList();
    return this;
  }

  /**
   * The length {@link #atFractionOfLimit} takes its fractions of when there is no limit (a trace
   * run lasts as long as its requests take). Default the limit.
   */
  Run span(Duration span) {
    this.span = span;
    return this;
  }

  /** Runs {@code action} just before request {@code index} is routed. */
  Run at(int index, Runnable action) {
    actions.merge(
        index,
        action,
        (a, b) ->
            () -> {
              a.run();
              b.run();
            });
    return this;
  }

  /**
   * Stops routing once {@code limit} has passed, even if requests are left (the result says how
   * many were routed). Default no limit.
   */
  Run limit(Duration limit) {
    this.limit = limit;
    return this;
  }

  /**
   * Runs {@code action} once {@code fraction} of the time limit has passed; the result records the
   * index of the request it came before, under {@code name}, so another run can fire it at the same
   * point with {@link #at}.
   */
  public Run atFractionOfLimit(double fraction, String name, Runnable action) {
    timed.add(new Timed(fraction, name, action));
    return this;
  }

  private record Timed(double fraction, String name, Runnable action) {}

  /** Called about once a second with the figures so far. */
  Run onProgress(Consumer<Result> progress) {
    this.progress = progress;
    return this;
  }

  Result execute() {
    long start = System.nanoTime();
    long nextProgress = start + PROGRESS_EVERY_NANOS;
    long promptTokens = 0;
    long cachedTokens = 0;
    int unavailable = 0;
    Map<String, Integer> fired = new LinkedHashMap<>();
    long end = limit == null ? Long.MAX_VALUE : start + limit.toNanos();
    int routed = 0;
    long[] prompts = new long[requests.size()];
    long[] cached = new long[requests.size()];
    for (int i = 0; i < requests.size() && System.nanoTime() < end; i++) {
      fireTimed(start, i, fired);
      Runnable action = actions.get(i);
      if (action != null) {
        action.run();
      }
      pause(start, i);
      InferenceRequest request = requests.get(i);
      try {
        Completion done = fleet.submit(request, policy.router());
        promptTokens += done.promptTokens();
        cachedTokens += done.cachedTokens();
        prompts[i] = done.promptTokens();
        cached[i] = done.cachedTokens();
      } catch (KvIndexException refused) {
        unavailable++;
      }
      routed = i + 1;
      long now = System.nanoTime();
      if (now >= nextProgress) {
        nextProgress = now + PROGRESS_EVERY_NANOS;
        progress.accept(
            new Result(
                policy.name(),
                i + 1,
                requests.size(),
                promptTokens,
                cachedTokens,
                unavailable,
                Duration.ofNanos(now - start),
                Map.of(),
                new long[0],
                new long[0]));
      }
    }
    return new Result(
        policy.name(),
        routed,
        requests.size(),
        promptTokens,
        cachedTokens,
        unavailable,
        Duration.ofNanos(System.nanoTime() - start),
        fired,
        java.util.Arrays.copyOf(prompts, routed),
        java.util.Arrays.copyOf(cached, routed));
  }

  private void fireTimed(long start, int index, Map<String, Integer> fired) {
    Duration length = limit != null ? limit : span;
    if (length == null) {
      return;
    }
    long elapsed = System.nanoTime() - start;
    for (Timed t : timed) {
      if (!fired.containsKey(t.name()) && elapsed >= t.fraction() * length.toNanos()) {
        fired.put(t.name(), index);
        t.action().run();
      }
    }
  }

  private void pause(long start, int index) {
    long due;
    if (arrivals != null) {
      due = start + arrivals.get(index).toNanos();
    } else if (Double.isInfinite(requestsPerSecond)) {
      return;
    } else {
      due = start + (long) (index * 1e9 / requestsPerSecond);
    }
    long wait;
    while ((wait = due - System.nanoTime()) > 0) {
      LockSupport.parkNanos(wait);
    }
  }

  /**
   * What a run did so far. Immutable.
   *
   * @param policy the routing policy
   * @param routed requests routed
   * @param total requests in the run
   * @param promptTokens prompt tokens served
   * @param cachedTokens prompt tokens served from the prefix cache
   * @param unavailable requests a pod refused (asleep, or too large for it)
   * @param elapsed time since the run started
   * @param fired the request index each timed action came before, by name
   * @param prompts each routed request's prompt tokens (empty in progress reports)
   * @param cached each routed request's cached tokens (0 when refused)
   */
  record Result(
      String policy,
      int routed,
      int total,
      long promptTokens,
      long cachedTokens,
      int unavailable,
      Duration elapsed,
      Map<String, Integer> fired,
      long[] prompts,
      long[] cached) {

    Result {
      fired = Map.copyOf(fired);
    }

    /** The hit rate of the routed requests from index {@code from} on (all of them for 0). */
    double hitRateFrom(int from) {
      long p = 0;
      long c = 0;
      for (int i = Math.max(0, from); i < prompts.length; i++) {
        p += prompts[i];
        c += cached[i];
      }
      return p == 0 ? 0 : (double) c / p;
    }

    /** The hit rate of the routed requests before index {@code to}. */
    double hitRateBefore(int to) {
      long p = 0;
      long c = 0;
      for (int i = 0; i < Math.min(to, prompts.length); i++) {
        p += prompts[i];
        c += cached[i];
      }
      return p == 0 ? 0 : (double) c / p;
    }

    /** Cached prompt tokens over prompt tokens: vLLM's prefix-cache hit rate. */
    double hitRate() {
      return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
    }
  }
}
