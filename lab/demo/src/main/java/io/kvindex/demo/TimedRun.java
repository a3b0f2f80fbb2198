package io.kvindex.demo;

import io.kvindex.common.KvIndexException;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import io.kvindex.simulator.TimedCompletion;
import io.kvindex.simulator.engine.EngineTiming;
import io.kvindex.simulator.engine.StepScheduler;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * Replays requests at their arrival times on a fleet of engines that take time (one {@link
 * StepScheduler} per pod), through one routing policy split over one or more gateways (request
 * {@code i} enters gateway {@code i mod gateways}), and keeps each request's TTFT and end-to-end
 * latency. Simulated time runs as fast as the machine can go (policies that see only the fleet), or
 * paced against the wall clock (kvindex, whose index takes real time to follow the engines'
 * events): then the result says how far the machine fell behind the simulated clock. Not
 * thread-safe: one call at a time.
 */
final class TimedRun {
  /** An event handled later than this on the simulated clock counts as late. */
  static final double BEHIND_SECONDS = 0.25;

  /** More than this share of events late: the machine rather than the fleet set the pace. */
  static final double LATE_SHARE = 0.01;

  /** Chooses a pod for each request, and hears when it is done. One run's thread calls it. */
  interface Picker {
    String pick(InferenceRequest request, int gateway, View fleet);

    /**
     * The request's first token is out on {@code pod}, as a gateway streaming the answer sees it.
     * Default nothing.
     */
    default void firstToken(InferenceRequest request, int gateway, String pod) {}

    /** The request is finished (or was refused: {@code done} null). Default nothing. */
    default void done(InferenceRequest request, int gateway, String pod, TimedCompletion done) {}

    /** How many picks each step of the policy decided, when it knows. Default none. */
    default Map<String, Integer> reasons() {
      return Map.of();
    }
  }

  /** What the simulated fleet is now: its pods, their queues and (ground truth) caches. */
  interface View {
    List<SimulatedPod> pods();

    /** Requests on the pod's engine: waiting plus running. */
    int queued(String pod);

    /** Prompt tokens the pod's engine has still to compute (waiting ones counted whole). */
    long pendingPrefillTokens(String pod);
  }

  private final List<InferenceRequest> requests;
  private final double[] arrivals;
  private final Fleet fleet;
  private final EngineTiming timing;
  private final int gateways;
  private final Picker picker;
  private double scale = Double.NaN;

  /**
   * @param arrivals each request's arrival, seconds from the run's start, in order
   */
  TimedRun(
      List<InferenceRequest> requests,
      double[] arrivals,
      Fleet fleet,
      EngineTiming timing,
      int gateways,
      Picker picker) {
    this.requests = List.copyOf(requests);
    this.arrivals = arrivals.clone();
    this.fleet = fleet;
    this.timing = timing;
    this.gateways = gateways;
    this.picker = picker;
  }

  /**
   * Paces simulated time against the wall clock, {@code scale} simulated seconds per wall second.
   * Default not paced.
   */
  TimedRun paced(double scale) {
    this.scale = scale;
    return this;
  }

  Result execute() {
    List<SimulatedPod> pods = fleet.pods();
    Map<String, StepScheduler> engines = new LinkedHashMap<>();
    for (SimulatedPod pod : pods) {
      engines.put(pod.name(), pod.scheduler(0, timing));
    }
    View view =
        new View() {
          @Override
          public List<SimulatedPod> pods() {
            return pods;
          }

          @Override
          public int queued(String pod) {
            return engines.get(pod).queued();
          }

          @Override
          public long pendingPrefillTokens(String pod) {
            return engines.get(pod).pendingPrefillTokens();
          }
        };
    TimedCompletion[] done = new TimedCompletion[requests.size()];
    Map<String, Integer> served = new LinkedHashMap<>();
    pods.forEach(p -> served.put(p.name(), 0));
    int refused = 0;
    long wallStart = System.nanoTime();
    double maxLate = 0;
    int late = 0;
    int events = 0;
    int next = 0;
    while (true) {
      StepScheduler soonest = null;
      for (StepScheduler s : engines.values()) {
        if (!Double.isNaN(s.stepEnd()) && (soonest == null || s.stepEnd() < soonest.stepEnd())) {
          soonest = s;
        }
      }
      double arrival = next < requests.size() ? arrivals[next] : Double.POSITIVE_INFINITY;
      if (soonest == null && next >= requests.size()) {
        break;
      }
      double at = soonest != null && soonest.stepEnd() <= arrival ? soonest.stepEnd() : arrival;
      double behind = pace(wallStart, at);
      events++;
      if (behind > maxLate) {
        maxLate = behind;
      }
      if (behind > BEHIND_SECONDS) {
        late++;
      }
      if (soonest != null && soonest.stepEnd() <= arrival) {
        soonest.finishStep();
        continue;
      }
      int index = next++;
      InferenceRequest request = requests.get(index);
      int gateway = index % gateways;
      String pod = picker.pick(request, gateway, view);
      try {
        engines
            .get(pod)
            .add(
                request,
                at,
                first -> picker.firstToken(request, gateway, pod),
                c -> {
                  done[index] = c;
                  picker.done(request, gateway, c.pod(), c);
                });
        served.merge(pod, 1, Integer::sum);
      } catch (KvIndexException e) {
        refused++;
        picker.done(request, gateway, pod, null);
      }
    }
    long preemptions = 0;
    double busy = 0;
    for (StepScheduler s : engines.values()) {
      preemptions += s.preemptions();
      busy += s.busySeconds();
    }
    return new Result(
        done,
        served,
        refused,
        preemptions,
        busy,
        (System.nanoTime() - wallStart) / 1e9,
        Double.isNaN(scale) ? Double.NaN : maxLate,
        Double.isNaN(scale) ? 0 : (double) late / Math.max(1, events),
        picker.reasons());
  }

  /** Waits for the wall clock to reach simulated time {@code at}; returns how late it is. */
  private double pace(long wallStart, double at) {
    if (Double.isNaN(scale)) {
      return 0;
    }
    long due = wallStart + (long) (at / scale * 1e9);
    long wait;
    while ((wait = due - System.nanoTime()) > 0) {
      LockSupport.parkNanos(wait);
    }
    return -wait / 1e9 * scale;
  }

  /**
   * One timed run's figures.
   *
   * @param done each request's completion, by index (null: refused)
   * @param served requests each pod took
   * @param refused requests a pod refused
   * @param preemptions requests the engines preempted for want of KV blocks
   * @param busySeconds simulated seconds the engines spent in steps, summed over pods
   * @param wallSeconds how long the run took on this machine
   * @param maxLateSeconds paced runs: how far the machine fell behind the simulated clock at worst
   *     (NaN when not paced)
   * @param lateShare paced runs: the share of events handled more than {@value #BEHIND_SECONDS} s
   *     late
   * @param reasons what decided the picks, when the policy says
   */
  record Result(
      TimedCompletion[] done,
      Map<String, Integer> served,
      int refused,
      long preemptions,
      double busySeconds,
      double wallSeconds,
      double maxLateSeconds,
      double lateShare,
      Map<String, Integer> reasons) {

    /** Whether the machine running the simulation, not the simulated fleet, set the pace. */
    boolean machineBound() {
      return lateShare > LATE_SHARE;
    }

    private List<TimedCompletion> finished() {
      List<TimedCompletion> out = new ArrayList<>();
      for (TimedCompletion c : done) {
        if (c != null && !Double.isNaN(c.firstToken())) {
          out.add(c);
        }
      }
      return out;
    }

    /** The {@code q} quantile of the TTFTs, seconds. */
    double ttft(double q) {
      return quantile(finished().stream().mapToDouble(TimedCompletion::ttft).toArray(), q);
    }

    /** The {@code q} quantile of the end-to-end latencies, seconds. */
    double endToEnd(double q) {
      return quantile(finished().stream().mapToDouble(TimedCompletion::endToEnd).toArray(), q);
    }

    /** Finished requests per simulated second, from the first arrival to the last finish. */
    double requestsPerSecond() {
      List<TimedCompletion> f = finished();
      return f.isEmpty() ? 0 : f.size() / span(f);
    }

    /** Prompt tokens of finished requests per simulated second. */
    double promptTokensPerSecond() {
      List<TimedCompletion> f = finished();
      return f.isEmpty() ? 0 : f.stream().mapToLong(TimedCompletion::promptTokens).sum() / span(f);
    }

    private static double span(List<TimedCompletion> f) {
      double first = f.stream().mapToDouble(TimedCompletion::arrival).min().orElse(0);
      double last = f.stream().mapToDouble(TimedCompletion::finished).max().orElse(0);
      return Math.max(1e-9, last - first);
    }

    /** Cached prompt tokens over prompt tokens, of the finished requests. */
    double hitRate() {
      long prompt = 0;
      long cached = 0;
      for (TimedCompletion c : finished()) {
        prompt += c.promptTokens();
        cached += c.cachedTokens();
      }
      return prompt == 0 ? 0 : (double) cached / prompt;
    }

    /** The busiest pod's requests over the mean per pod (1.0: perfectly even). */
    double loadSpread() {
      int max = served.values().stream().mapToInt(Integer::intValue).max().orElse(0);
      double mean = served.values().stream().mapToInt(Integer::intValue).average().orElse(0);
      return mean == 0 ? Double.NaN : max / mean;
    }

    static double quantile(double[] values, double q) {
      if (values.length == 0) {
        return Double.NaN;
      }
      java.util.Arrays.sort(values);
      int at = (int) Math.min(values.length - 1, Math.ceil(q * values.length) - 1);
      return values[Math.max(0, at)];
    }
  }
}
