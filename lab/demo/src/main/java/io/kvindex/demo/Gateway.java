package io.kvindex.demo;

import io.kvindex.simulator.PodRouter;
import java.util.List;
import java.util.Map;

/**
 * The gateway's part in the kvindex run: where each request goes, and what it learnt of the routing
 * and of the closed loop, for the summary. One run drives it from one thread.
 */
interface Gateway extends PodRouter {
  /**
   * How the predictions of the requests from index {@code from} to {@code to} (exclusive) compared
   * with what the engines reported: exact, over, under.
   */
  RouterPolicy.Predictions predictions(int from, int to);

  /**
   * As {@link #predictions(int, int)}, over the requests {@code pod} served ({@code null}: every
   * pod's).
   */
  RouterPolicy.Predictions predictions(String pod, int from, int to);

  /** The pod that served each request so far, by the request's index (null: none did). */
  List<String> servedBy();

  /** The index of the first request from {@code from} on that {@code pod} served, or -1. */
  default int firstServedBy(String pod, int from) {
    List<String> served = servedBy();
    for (int i = Math.max(0, from); i < served.size(); i++) {
      if (pod.equals(served.get(i))) {
        return i;
      }
    }
    return -1;
  }

  /** The index of the last request before {@code to} that {@code pod} served, or -1. */
  default int lastServedBy(String pod, int to) {
    List<String> served = servedBy();
    for (int i = Math.min(to, served.size()) - 1; i >= 0; i--) {
      if (pod.equals(served.get(i))) {
        return i;
      }
    }
    return -1;
  }

  /** Observations that could not be made (the engine's usage did not reach kvindex). */
  int observeFailures();

  /** How many picks each policy step decided (longest_prefix, least_load, ...). */
  Map<String, Integer> reasons();

  /**
   * The {@code q} quantile of the gateway's round trips to kvindex for a pick, in ms; NaN before
   * any.
   */
  double roundTripMillis(double q);

  /** Requests whose pick failed (they went to the least loaded pod). */
  int failures();

  /** Why the last failed pick failed, or null. */
  String lastFailure();
}
