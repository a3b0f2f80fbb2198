package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.PodRouter;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * kvindex routing as a gateway does it: each request's token ids go to a router replica's {@code
 * POST /score} (the replicas take turns), with the pods' current load, and the request goes to the
 * pod the router picks. The load is the number of requests each pod got among the last few, the
 * stand-in for running requests (the simulated pods answer at once). Not thread-safe: one run
 * drives it.
 */
final class RouterPolicy implements PodRouter {
  private static final int LOAD_WINDOW = 64;

  private final RouterClient client;
  private final List<String> pods;
  private final Deque<String> recent = new ArrayDeque<>();
  private final Map<String, Integer> load = new HashMap<>();
  private final Map<String, Integer> reasons = new TreeMap<>();
  private final List<Long> roundTrips = new ArrayList<>();
  private int failures;
  private String lastFailure;

  RouterPolicy(List<URI> routers, List<String> pods) {
    this.client = new RouterClient(routers);
    this.pods = List.copyOf(pods);
  }

  @Override
  public SimulatedPod choose(InferenceRequest request, List<SimulatedPod> candidates) {
    String pod;
    long start = System.nanoTime();
    try {
      JsonNode pick = client.score(request.promptTokens(), pods, load).path("pick");
      pod = pick.path("pod").asText(null);
      reasons.merge(pick.path("reason").asText("none"), 1, Integer::sum);
      if (pod == null || !pods.contains(pod)) {
        throw new IOException("the router's answer names no candidate pod: " + pick);
      }
    } catch (IOException e) {
      failures++;
      lastFailure = e.getMessage();
      pod = leastLoaded();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while routing", e);
    }
    roundTrips.add(System.nanoTime() - start);
    routed(pod);
    for (SimulatedPod p : candidates) {
      if (p.name().equals(pod)) {
        return p;
      }
    }
    throw new IllegalStateException("the router picked " + pod + ", not a candidate");
  }

  /** How many picks each policy step decided (longest_prefix, least_load, ...). */
  Map<String, Integer> reasons() {
    return Map.copyOf(reasons);
  }

  /** The {@code q} quantile of the router round trips, in ms, or NaN before any. */
  double roundTripMillis(double q) {
    if (roundTrips.isEmpty()) {
      return Double.NaN;
    }
    List<Long> sorted = new ArrayList<>(roundTrips);
    Collections.sort(sorted);
    int at = (int) Math.min(sorted.size() - 1, Math.ceil(q * sorted.size()) - 1);
    return sorted.get(Math.max(0, at)) / 1e6;
  }

  /** Requests whose router call failed (they went to the least loaded pod). */
  int failures() {
    return failures;
  }

  String lastFailure() {
    return lastFailure;
  }

  private void routed(String pod) {
    recent.addLast(pod);
    load.merge(pod, 1, Integer::sum);
    if (recent.size() > LOAD_WINDOW) {
      load.merge(recent.removeFirst(), -1, Integer::sum);
    }
  }

  private String leastLoaded() {
    String best = pods.get(0);
    for (String p : pods) {
      if (load.getOrDefault(p, 0) < load.getOrDefault(best, 0)) {
        best = p;
      }
    }
    return best;
  }
}
