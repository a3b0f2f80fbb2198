package io.kvindex.simulator.load;

import io.kvindex.common.KvIndexException;
import io.kvindex.simulator.FleetStats;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.SimulatedFleet;
import java.time.Duration;
import java.util.Objects;
import java.util.Random;
import java.util.function.Consumer;

/**
 * Drives a fleet with a workload, pacing arrivals in (scaled) real time on the calling thread.
 * Thread-safe: {@link #stop()} may be called from any thread.
 */
public final class LoadRunner {
  private final SimulatedFleet fleet;
  private final Options options;
  private volatile boolean stopped;
  private long nextReportNanos;

  /**
   * How to run. Immutable and thread-safe.
   *
   * @param speed time scaling: 1 = real time, 10 = ten times faster, {@code
   *     Double.POSITIVE_INFINITY} = as fast as possible
   * @param ratePerSecond if not {@code null}, ignore the workload's arrival times and send Poisson
   *     arrivals at this rate (before scaling)
   * @param duration stop after this much (unscaled) workload time, or {@code null} for no limit
   * @param maxRequests stop after this many requests ({@code Long.MAX_VALUE} for no limit)
   * @param reportEvery how often (wall time) to call the progress callback
   * @param router the routing function, or {@code null} for the fleet's
   * @param seed seeds the Poisson arrivals
   */
  public record Options(
      double speed,
      Double ratePerSecond,
      Duration duration,
      long maxRequests,
      Duration reportEvery,
      PodRouter router,
      long seed) {
    public Options {
      if (!(speed > 0)) {
        throw new IllegalArgumentException("speed must be > 0, got " + speed);
      }
      if (ratePerSecond != null && !(ratePerSecond > 0)) {
        throw new IllegalArgumentException("ratePerSecond must be > 0, got " + ratePerSecond);
      }
      if (maxRequests < 0) {
        throw new IllegalArgumentException("maxRequests must be >= 0, got " + maxRequests);
      }
      Objects.requireNonNull(reportEvery, "reportEvery");
    }

    /** Real time, the workload's arrivals, no limit, a report every 5 s, the fleet's router. */
    public static Options defaults() {
      return new Options(1, null, null, Long.MAX_VALUE, Duration.ofSeconds(5), null, 1);
    }

    public Options withSpeed(double speed) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }

    public Options withRate(Double ratePerSecond) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }

    public Options withDuration(Duration duration) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }

    public Options withMaxRequests(long maxRequests) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }

    public Options withReportEvery(Duration reportEvery) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }

    public Options withRouter(PodRouter router) {
      return new Options(speed, ratePerSecond, duration, maxRequests, reportEvery, router, seed);
    }
  }

  public LoadRunner(SimulatedFleet fleet, Options options) {
    this.fleet = Objects.requireNonNull(fleet, "fleet");
    this.options = Objects.requireNonNull(options, "options");
  }

  /** Asks a running {@link #run} to return after its current request. */
  public void stop() {
    stopped = true;
  }

  /**
   * Sends the workload's requests until it ends, a limit is reached, {@link #stop()} is called or
   * the thread is interrupted; refused requests are counted in the fleet's stats, not thrown.
   *
   * @param progress called with the fleet's stats every {@code reportEvery}, and once at the end
   * @return the fleet's stats at the end
   */
  public FleetStats run(Workload workload, Consumer<FleetStats> progress) {
    Random arrivals = new Random(options.seed());
    long startNanos = System.nanoTime();
    nextReportNanos = startNanos + options.reportEvery().toNanos();
    double poissonSeconds = 0;
    long sent = 0;
    while (!stopped && sent < options.maxRequests() && workload.hasNext()) {
      TimedRequest next = workload.next();
      Duration at = next.at();
      if (options.ratePerSecond() != null) {
        poissonSeconds += -Math.log(1 - arrivals.nextDouble()) / options.ratePerSecond();
        at = Duration.ofNanos((long) (poissonSeconds * 1e9));
      }
      if (options.duration() != null && at.compareTo(options.duration()) > 0) {
        break;
      }
      if (!waitUntil(startNanos + scaled(at), progress)) {
        break;
      }
      maybeReport(progress);
      submit(next);
      sent++;
    }
    FleetStats end = fleet.stats();
    progress.accept(end);
    return end;
  }

  private void submit(TimedRequest next) {
    String model = next.model() == null ? fleet.models().get(0) : next.model();
    try {
      if (options.router() == null) {
        fleet.submit(model, next.request());
      } else {
        fleet.submit(model, next.request(), options.router());
      }
    } catch (KvIndexException refused) {
      // counted by the fleet as failed
    }
  }

  private void maybeReport(Consumer<FleetStats> progress) {
    if (System.nanoTime() >= nextReportNanos) {
      progress.accept(fleet.stats());
      nextReportNanos = System.nanoTime() + options.reportEvery().toNanos();
    }
  }

  private long scaled(Duration at) {
    if (Double.isInfinite(options.speed())) {
      return 0;
    }
    return (long) (at.toNanos() / options.speed());
  }

  /** Paces arrivals; returns false if interrupted or stopped. */
  private boolean waitUntil(long dueNanos, Consumer<FleetStats> progress) {
    while (!stopped) {
      long now = System.nanoTime();
      if (now >= dueNanos) {
        return true;
      }
      maybeReport(progress);
      try {
        Thread.sleep(Math.max(1, Math.min((dueNanos - now) / 1_000_000, 200)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }
}
