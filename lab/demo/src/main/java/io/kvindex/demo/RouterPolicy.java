package io.kvindex.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvindex.simulator.Completion;
import io.kvindex.simulator.InferenceRequest;
import io.kvindex.simulator.SimulatedPod;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * kvindex routing as a gateway does it: each request's token ids go to a router replica's {@code
 * POST /score} (the replicas take turns), with the pods' current load, and the request goes to the
 * pod the router picks. The load is the number of requests each pod got among the last few, the
 * stand-in for running requests (the simulated pods answer at once). Once the pod has served the
 * request, the engine's {@code usage} (its {@code cached_tokens}) goes back to a router with the
 * pick's prediction ({@code POST /observe}), with the prompt for pods the router asked it of (their
 * evictions are inferred). Not thread-safe: one run drives it.
 */
final class RouterPolicy implements Gateway {
  private static final int LOAD_WINDOW = 64;

  private final RouterClient client;
  private final List<String> pods;
  private final Deque<String> recent = new ArrayDeque<>();
  private final Map<String, Integer> load = new HashMap<>();
  private final Map<String, Integer> reasons = new TreeMap<>();
  private final List<Long> roundTrips = new ArrayList<>();
  private int failures;
  private String lastFailure;
  private int predicted = -1;
  private final List<Byte> outcomes = new ArrayList<>();
  private final List<String> servedBy = new ArrayList<>();
  private int observeFailures;
  private final Set<String> blocksWanted = new HashSet<>();

  private final boolean inFlightLoad;
  private int gateways = 1;
  private final Map<InferenceRequest, Integer> predictedOf = new IdentityHashMap<>();

  /** Per pod, the uncached prompt tokens of this gateway's requests with no first token yet. */
  private final Map<String, Long> queuedTokens = new HashMap<>();

  private final Map<InferenceRequest, Long> queuedOf = new IdentityHashMap<>();

  RouterPolicy(List<URI> routers, List<String> pods) {
    this(routers, pods, false);
  }

  /**
   * @param inFlightLoad the load is the requests this gateway sent each pod that are not finished
   *     (engines that take time), not its share of the last {@value #LOAD_WINDOW} routed
   */
  RouterPolicy(List<URI> routers, List<String> pods, boolean inFlightLoad) {
    this.client = new RouterClient(routers);
    this.pods = List.copyOf(pods);
    this.inFlightLoad = inFlightLoad;
  }

  @Override
  public SimulatedPod choose(InferenceRequest request, List<SimulatedPod> candidates) {
    String pod;
    long start = System.nanoTime();
    try {
      JsonNode pick =
          client
              .score(
                  request.promptTokens(),
                  pods,
                  loadView(),
                  inFlightLoad ? scaled(queuedTokens) : NOTHING_QUEUED)
              .path("pick");
      pod = pick.path("pod").asText(null);
      predicted = pick.path("matched_blocks").asInt(0);
      reasons.merge(pick.path("reason").asText("none"), 1, Integer::sum);
      if (pod == null || !pods.contains(pod)) {
        throw new IOException("the router's answer names no candidate pod: " + pick);
      }
    } catch (IOException e) {
      failures++;
      lastFailure = e.getMessage();
      pod = leastLoaded();
      predicted = -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while routing", e);
    }
    roundTrips.add(System.nanoTime() - start);
    routed(pod);
    if (inFlightLoad) {
      predictedOf.put(request, predicted);
      long uncached =
          Math.max(
              0, request.promptLength() - (long) Math.max(0, predicted) * Workloads.BLOCK_SIZE);
      queuedOf.put(request, uncached);
      queuedTokens.merge(pod, uncached, Long::sum);
    }
    for (SimulatedPod p : candidates) {
      if (p.name().equals(pod)) {
        return p;
      }
    }
    throw new IllegalStateException("the router picked " + pod + ", not a candidate");
  }

  /**
   * The gateway's half of the closed loop: sends the engine's usage (its cached_tokens) back to a
   * router with the prediction the pick carried, and keeps the outcome.
   */
  @Override
  public void served(InferenceRequest request, Completion completion) {
    servedBy.add(completion.pod());
    if (inFlightLoad) {
      load.merge(completion.pod(), -1, Integer::sum);
      prefilled(request, completion.pod());
      Integer own = predictedOf.remove(request);
      predicted = own == null ? -1 : own;
    }
    if (predicted < 0) {
      outcomes.add(NOT_OBSERVED);
      return;
    }
    try {
      String pod = completion.pod();
      int[] prompt = blocksWanted.contains(pod) ? request.promptTokens() : null;
      JsonNode answer = client.observe(pod, predicted, completion.usage(), prompt);
      int error = answer.path("prediction_error_blocks").asInt();
      if (answer.path("blocks_wanted").asBoolean()) {
        blocksWanted.add(pod);
      } else {
        blocksWanted.remove(pod);
      }
      outcomes.add((byte) Integer.signum(error));
    } catch (IOException e) {
      observeFailures++;
      outcomes.add(NOT_OBSERVED);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while observing", e);
    }
  }

  @Override
  public void refused(InferenceRequest request, SimulatedPod pod) {
    servedBy.add(null);
    if (inFlightLoad) {
      load.merge(pod.name(), -1, Integer::sum);
      prefilled(request, pod.name());
      predictedOf.remove(request);
    }
    outcomes.add(NOT_OBSERVED);
  }

  /**
   * The request's first token is out: its prompt no longer waits on its pod (engines that take
   * time; a gateway streaming the answer sees this).
   */
  void firstToken(InferenceRequest request, String pod) {
    prefilled(request, pod);
  }

  private void prefilled(InferenceRequest request, String pod) {
    Long tokens = queuedOf.remove(request);
    if (tokens != null) {
      queuedTokens.merge(pod, -tokens, Long::sum);
    }
  }

  private static final byte NOT_OBSERVED = 2;

  /** The instant pods serve each request at once: no prompt tokens ever wait on them. */
  private static final Map<String, Long> NOTHING_QUEUED = Map.of();

  /**
   * How the predictions of the requests from index {@code from} to {@code to} (exclusive) compared
   * with what the engines reported: exact, over, under.
   */
  @Override
  public Predictions predictions(int from, int to) {
    return predictions(null, from, to);
  }

  /**
   * As {@link #predictions(int, int)}, over the requests {@code pod} served ({@code null}: every
   * pod's).
   */
  @Override
  public Predictions predictions(String pod, int from, int to) {
    int exact = 0;
    int over = 0;
    int under = 0;
    for (int i = Math.max(0, from); i < Math.min(to, outcomes.size()); i++) {
      if (pod != null && !pod.equals(servedBy.get(i))) {
        continue;
      }
      switch (outcomes.get(i)) {
        case 0 -> exact++;
        case 1 -> over++;
        case -1 -> under++;
        default -> {
          // not observed
        }
      }
    }
    return new Predictions(exact, over, under);
  }

  /** Observed requests by how the prediction compared. */
  record Predictions(int exact, int over, int under) {
    int observed() {
      return exact + over + under;
    }

    double exactShare() {
      return observed() == 0 ? Double.NaN : (double) exact / observed();
    }
  }

  @Override
  public List<String> servedBy() {
    return Collections.unmodifiableList(servedBy);
  }

  @Override
  public int observeFailures() {
    return observeFailures;
  }

  /** How many picks each policy step decided (longest_prefix, least_load, ...). */
  @Override
  public Map<String, Integer> reasons() {
    return Map.copyOf(reasons);
  }

  /** The {@code q} quantile of the router round trips, in ms, or NaN before any. */
  @Override
  public double roundTripMillis(double q) {
    if (roundTrips.isEmpty()) {
      return Double.NaN;
    }
    List<Long> sorted = new ArrayList<>(roundTrips);
    Collections.sort(sorted);
    int at = (int) Math.min(sorted.size() - 1, Math.ceil(q * sorted.size()) - 1);
    return sorted.get(Math.max(0, at)) / 1e6;
  }

  /** Requests whose router call failed (they went to the least loaded pod). */
  @Override
  public int failures() {
    return failures;
  }

  @Override
  public String lastFailure() {
    return lastFailure;
  }

  /**
   * This gateway's estimate of the fleet's load to send the router: with {@link #gateways} peers
   * routing alike, its own in-flight count times their number.
   */
  private Map<String, Long> scaled(Map<String, Long> own) {
    if (gateways == 1) {
      return own;
    }
    Map<String, Long> out = new HashMap<>();
    own.forEach((pod, n) -> out.put(pod, n * gateways));
    return out;
  }

  private Map<String, Integer> loadView() {
    if (gateways == 1) {
      return load;
    }
    Map<String, Integer> scaled = new HashMap<>();
    load.forEach((pod, n) -> scaled.put(pod, n * gateways));
    return scaled;
  }

  /**
   * Tells the gateway that {@code gateways} gateways (itself included) share the traffic, each
   * seeing only its own requests: it sends the router its own load times that many, so the router's
   * overload guard, whose thresholds are in fleet-wide requests, still bites. Default 1.
   */
  RouterPolicy gateways(int gateways) {
    this.gateways = gateways;
    return this;
  }

  private void routed(String pod) {
    if (inFlightLoad) {
      load.merge(pod, 1, Integer::sum);
      return;
    }
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
