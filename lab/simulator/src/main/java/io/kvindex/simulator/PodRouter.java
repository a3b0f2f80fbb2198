package io.kvindex.simulator;

import io.kvindex.simulator.http.ScoringRouter;
import java.net.URI;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Chooses the pod that serves a request, among the fleet's pods for the request's model. The router
 * module plugs in here; this module brings {@link #random} and {@link #roundRobin}. Implementations
 * must be thread-safe when the fleet is driven from several threads.
 */
@FunctionalInterface
public interface PodRouter {

  /**
   * @param request the request to place
   * @param pods the candidates (the pods serving the request's model), never empty
   * @return one of {@code pods}
   */
  SimulatedPod choose(InferenceRequest request, List<SimulatedPod> pods);

  /**
   * The chosen pod served the request; {@code completion} is what its engine reported, cached
   * tokens included, as a gateway reads them from vLLM's usage. Called by the fleet after {@link
   * #choose}; default nothing.
   */
  default void served(InferenceRequest request, Completion completion) {}

  /** The chosen pod refused the request (asleep, or too large). Default nothing. */
  default void refused(InferenceRequest request, SimulatedPod pod) {}

  /** A uniformly random pod, seeded. Thread-safe. */
  static PodRouter random(long seed) {
    Random random = new Random(seed);
    return (request, pods) -> {
      synchronized (random) {
        return pods.get(random.nextInt(pods.size()));
      }
    };
  }

  /**
   * Through kvindex's HTTP scoring service ({@code kvindex router}): each request's token ids go to
   * {@code POST /score} on the given router replicas in turn, and the request goes to the pod the
   * router picks (the least loaded candidate when no router answers). Thread-safe.
   *
   * @param routers base URLs such as {@code http://router-1:8190}
   */
  static PodRouter scoring(List<URI> routers) {
    return new ScoringRouter(routers, null);
  }

  /**
   * As {@link #scoring(List)}, to routers that run with an auth token: each request carries {@code
   * Authorization: Bearer <token>}.
   *
   * @param token the routers' shared secret (their {@code --auth-token-file}), or null for none
   */
  static PodRouter scoring(List<URI> routers, String token) {
    return new ScoringRouter(routers, token);
  }

  /**
   * The best any router could do: scores every candidate from the pods' true caches at decision
   * time, the blocks of requests it routed and the pods have not served yet included, and picks
   * with {@code pick}, a router's own pick policy (load: requests among the last {@value
   * RecentLoad#DEFAULT_WINDOW} routed). A router's distance from it is its index's own loss
   * (staleness, lag, lost events), not its policy's. Thread-safe.
   */
  static PodRouter oracle(OraclePick pick) {
    return new OracleRouter(pick);
  }

  /** Each pod in turn. Thread-safe. */
  static PodRouter roundRobin() {
    AtomicLong next = new AtomicLong();
    return (request, pods) -> pods.get(Math.floorMod(next.getAndIncrement(), pods.size()));
  }
}
