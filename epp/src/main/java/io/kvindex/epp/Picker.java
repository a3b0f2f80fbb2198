package io.kvindex.epp;

import io.kvindex.index.PodMatch;
import io.kvindex.router.Explanation;
import io.kvindex.router.InFlight;
import io.kvindex.router.KvRouter;
import io.kvindex.router.LoadSignal;
import io.kvindex.router.Pick;
import io.kvindex.router.ScoreRequest;
import io.kvindex.router.Scores;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides where one request goes: from the candidate endpoints and the request's prompt to the pick
 * and its fallbacks, by the router library's scores and pick policy. Thread-safe.
 *
 * <p>Implementation notes. The steps: no candidate → 503; a sheddable request while the candidates
 * are saturated → 429 (as the reference picker sheds); then the prompt's tokens (token ids as
 * given; text and chat from an engine's {@code /tokenize}), the index's scores for the candidate
 * pods, and the policy's pick; the fallbacks are the policy's picks among the endpoints left, one
 * after the other. A request the picker cannot score (no body, an unknown model, a body it cannot
 * read, a tokenizer that failed) still gets endpoints, by load alone, and the reason is counted. A
 * pool with several target ports has several endpoints per pod: each is scored as its pod (the
 * index's best rank), and the policy tells them apart by load.
 */
final class Picker {
  private static final Logger log = LoggerFactory.getLogger(Picker.class);

  private final KvRouter router;
  private final ModelMap models;
  private final LoadBook loads;
  private final EngineTokenizer tokenizer;
  private final EppMetrics metrics;
  private final int fallbacks;
  private final Duration routeTtl;
  private final Duration answeredRouteTtl;

  /** Runs what may wait on Redis (the debug log's explanations), off the request's threads. */
  private final Executor blocking;

  Picker(
      KvRouter router,
      ModelMap models,
      LoadBook loads,
      EngineTokenizer tokenizer,
      EppMetrics metrics,
      int fallbacks,
      Duration routeTtl,
      Duration answeredRouteTtl,
      Executor blocking) {
    this.router = router;
    this.blocking = blocking;
    this.models = models;
    this.loads = loads;
    this.tokenizer = tokenizer;
    this.metrics = metrics;
    this.fallbacks = fallbacks;
    this.routeTtl = routeTtl;
    this.answeredRouteTtl = answeredRouteTtl.compareTo(routeTtl) < 0 ? answeredRouteTtl : routeTtl;
  }

  /**
   * Picks endpoints for a request. The future is complete on return unless the request is scored
   * from the index: then it completes once the index has answered (a text or chat prompt tokenized
   * first, by an engine, on the picker's own threads); it fails only with the router library's
   * exceptions.
   *
   * @param candidates the endpoints it may go to (the proxy's subset applied)
   * @param call what its body says, or null when the picker cannot score it
   * @param unscored why it cannot be scored, when {@code call} is null
   * @param sheddable whether it may be shed when the candidates are saturated
   */
  CompletableFuture<Decision> decide(
      List<Endpoint> candidates, InferenceCall call, String unscored, boolean sheddable) {
    if (candidates.isEmpty()) {
      return done(Decision.refused(503, "no ready endpoint to serve the request"));
    }
    if (sheddable && loads.saturation(candidates) >= 1.0) {
      return done(
          Decision.refused(429, "the endpoints are saturated and the request is sheddable"));
    }
    if (call == null) {
      return done(byLoad(candidates, unscored, 1));
    }
    ModelMap.Target target = models.target(call.model());
    if (target == null) {
      return done(byLoad(candidates, "unknown_model", call.prompts()));
    }
    if (call.tokenIds() != null) {
      return scored(candidates, call, target, call.tokenIds());
    }
    return tokenize(candidates, call)
        .thenCompose(
            tokens ->
                tokens == null
                    ? done(byLoad(candidates, "tokenize_failed", call.prompts()))
                    : scored(candidates, call, target, tokens));
  }

  private static CompletableFuture<Decision> done(Decision d) {
    return CompletableFuture.completedFuture(d);
  }

  /** The prompt's tokens from the least loaded engine, or null when it could not tell them. */
  private CompletableFuture<int[]> tokenize(List<Endpoint> candidates, InferenceCall call) {
    Endpoint engine = leastLoaded(candidates);
    long start = System.nanoTime();
    return tokenizer
        .tokenize(engine, call.tokenize())
        .handle(
            (tokens, e) -> {
              if (e == null) {
                metrics.tokenized("ok", System.nanoTime() - start);
                return tokens;
              }
              metrics.tokenized("failed", System.nanoTime() - start);
              Throwable why = e.getCause() != null ? e.getCause() : e;
              log.debug("tokenizing for model {} failed: {}", call.model(), why.getMessage());
              return null;
            });
  }

  /**
   * The index's scores and the pick: the prompt hashed on the calling thread, the rest once the
   * index has answered (on the Redis client's thread), never waiting for it.
   */
  private CompletableFuture<Decision> scored(
      List<Endpoint> candidates, InferenceCall call, ModelMap.Target target, int[] tokens) {
    long start = System.nanoTime();
    Set<String> pods = new LinkedHashSet<>();
    candidates.forEach(e -> pods.add(e.pod()));
    return router
        .scoreAsync(
            new ScoreRequest(
                target.model(),
                target.lora(),
                call.cacheSalt(),
                tokens,
                null,
                new ArrayList<>(pods)))
        .thenApply(scores -> picked(candidates, call, target, scores, tokens.length, start));
  }

  private Decision picked(
      List<Endpoint> candidates,
      InferenceCall call,
      ModelMap.Target target,
      Scores scores,
      int promptTokens,
      long start) {
    long scored = System.nanoTime();
    metrics.step("score", scored - start);
    Scores byEndpoint = byEndpoint(scores, candidates);
    List<Endpoint> chosen = new ArrayList<>();
    Pick pick = choose(byEndpoint, candidates, chosen, scoredLoad());
    metrics.step("pick", System.nanoTime() - scored);
    if (log.isDebugEnabled()) {
      // The explanation reads the index again: on the picker's own threads, never the caller's.
      blocking.execute(() -> explain(byEndpoint, candidates));
    }
    Endpoint primary = chosen.get(0);
    int prompts = Math.max(call.prompts(), 1);
    long uncached = (long) uncached(scores, primary, promptTokens) * prompts;
    loads.opened(primary.key());
    long ticket = loads.queued(primary.key(), uncached);
    // In the shared load view (when on) until the stream ends: every replica's picks see it.
    InFlight counted =
        router.started(
            byEndpoint, pick, (int) Math.min(Integer.MAX_VALUE, (long) promptTokens * prompts));
    return new Decision(
        0, null, chosen, pick, scores, target.model(), null, prompts, ticket, counted);
  }

  /**
   * The prompt tokens the endpoint's engine computes for the prompt: those past the prefix the
   * index predicts cached there, as the time-aware pick policy counts it.
   */
  private static int uncached(Scores scores, Endpoint e, int promptTokens) {
    double cached =
        scores.indexAvailable()
            ? scores.pod(e.pod()).map(m -> m.score() * scores.blockSize()).orElse(0.0)
            : 0;
    return (int) Math.max(0, promptTokens - Math.min(promptTokens, cached));
  }

  /**
   * Records the decision's pick in the index as a speculative route (when routes are recorded and
   * the request was scored from the index): called once the pick has been answered, so that the
   * route's write is not on the request's path. Never blocks.
   */
  void recordRoute(Decision d) {
    if (routes(d)) {
      router.recordRoute(d.model(), d.primary().pod(), d.scores().blockKeys(), routeTtl);
    }
  }

  /**
   * The engine at {@code served} has answered the decision's request ({@code computed}: with a
   * success, so it has computed the prompt): the pick's route now lasts only until the engine's
   * events are in the index, {@code answeredRouteTtl}, after which the index's own entries say what
   * the engine holds (evictions included: a route left for its whole TTL outlives the blocks of a
   * pod that evicts them meanwhile, and over-predicts). A request served by another endpoint's pod
   * moves the route there; one that failed, or was never answered, takes it back. Never blocks.
   */
  void answered(Decision d, Endpoint served, boolean computed) {
    if (!routes(d)) {
      return;
    }
    String picked = d.primary().pod();
    boolean moved = served != null && !served.pod().equals(picked);
    if (!computed || moved || answeredRouteTtl.isZero()) {
      router.recordRoute(d.model(), picked, d.scores().blockKeys(), RETRACTED);
    }
    if (computed && served != null && !answeredRouteTtl.isZero()) {
      router.recordRoute(d.model(), served.pod(), d.scores().blockKeys(), answeredRouteTtl);
    }
  }

  /** A route's shortest life: the index ends a route by recording it again for this long. */
  private static final Duration RETRACTED = Duration.ofMillis(1);

  /** Whether the decision's pick was recorded as a route. */
  private boolean routes(Decision d) {
    Scores scores = d.scores();
    return !routeTtl.isZero()
        && scores != null
        && scores.indexAvailable()
        && scores.queriedBlocks() > 0;
  }

  private Decision byLoad(List<Endpoint> candidates, String reason, int prompts) {
    Scores none =
        new Scores(
            "unscored",
            0,
            new long[0],
            ThreadLocalRandom.current().nextLong(),
            List.of(),
            Scores.Outcome.UNAVAILABLE);
    List<Endpoint> chosen = new ArrayList<>();
    Pick pick = choose(none, candidates, chosen, loads); // no model: the view has nothing for it
    loads.opened(chosen.get(0).key());
    long ticket = loads.queued(chosen.get(0).key(), -1);
    metrics.unscored(reason);
    return new Decision(0, null, chosen, pick, null, null, reason, prompts, ticket, InFlight.NONE);
  }

  /**
   * The load a scored pick is given: this picker's counts and the engines' figures; or, with the
   * shared load view, nothing, since the router adds the view (every replica's counts, this one's
   * included) and the engines' figures count the same requests again.
   */
  private LoadSignal scoredLoad() {
    return router.sharesLoad() ? LoadSignal.none() : loads;
  }

  /** The pick, then the fallbacks, each the policy's choice among the endpoints left. */
  private Pick choose(
      Scores scores, List<Endpoint> candidates, List<Endpoint> chosen, LoadSignal load) {
    Map<String, Endpoint> left = new LinkedHashMap<>();
    candidates.forEach(e -> left.put(e.key(), e));
    Pick first = null;
    while (!left.isEmpty() && chosen.size() <= fallbacks) {
      Pick pick = router.pick(scores, List.copyOf(left.keySet()), load);
      chosen.add(left.remove(pick.pod()));
      if (first == null) {
        first = pick;
      }
    }
    return first;
  }

  /** The scores per endpoint key: the pods' own when each pod has one endpoint. */
  private static Scores byEndpoint(Scores scores, List<Endpoint> candidates) {
    boolean plain = candidates.stream().allMatch(e -> e.key().equals(e.pod()));
    if (plain || !scores.indexAvailable()) {
      return scores;
    }
    List<PodMatch> matches = new ArrayList<>();
    for (Endpoint e : candidates) {
      scores
          .pod(e.pod())
          .ifPresent(
              m ->
                  matches.add(
                      new PodMatch(
                          e.key(),
                          m.depth(),
                          m.gpuDepth(),
                          m.gpuCpuDepth(),
                          m.score(),
                          m.rankDepths(),
                          m.speculative())));
    }
    return new Scores(
        scores.model(),
        scores.blockSize(),
        scores.blockKeys(),
        scores.affinityKey(),
        matches,
        scores.outcome());
  }

  private void explain(Scores scores, List<Endpoint> candidates) {
    List<String> keys = candidates.stream().map(Endpoint::key).toList();
    Explanation why = router.explain(scores, keys, scoredLoad());
    log.debug("pick for model {}: {}", scores.model(), why);
  }

  private Endpoint leastLoaded(List<Endpoint> candidates) {
    Endpoint best = candidates.get(0);
    for (Endpoint e : candidates) {
      if (loads.load(e.key()) < loads.load(best.key())) {
        best = e;
      }
    }
    return best;
  }
}
