package io.kvindex.router;

import io.kvindex.index.Lookups;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What a gateway asks the shared KV-cache index: which candidate pod already holds how much of a
 * prompt, and which pod to send it to. Thread-safe: build one per gateway process and share it.
 *
 * <pre>{@code
 * try (KvRouter router = KvRouter.builder()
 *     .redisUri("redis://127.0.0.1:6379")
 *     .model("Qwen/Qwen3-8B", ModelKeys.engine("sha256_cbor", "42", 16))
 *     .build()) {
 *   Scores scores = router.score(ScoreRequest.ofTokens("Qwen/Qwen3-8B", tokenIds, pods));
 *   Pick pick = router.pick(scores, pods, runningRequests::get);
 * }
 * }</pre>
 *
 * <p>A lookup never blocks past the configured {@linkplain KvRouterBuilder#lookupBudget budget}:
 * when Redis is slow or unreachable, {@link #score} returns {@linkplain Scores#indexAvailable()
 * unavailable} scores (and counts them) so the gateway falls back to load balancing. Errors that
 * retrying cannot fix (a wrong password, a missing ACL permission, a script bug) throw a {@code
 * KvIndexException}.
 */
public interface KvRouter extends AutoCloseable {

  /** A builder with the defaults of docs/configuration.md. */
  static KvRouterBuilder builder() {
    return new KvRouterBuilder();
  }

  /**
   * Scores every candidate pod of the request.
   *
   * @throws IllegalArgumentException for bad input, for example a model without a configured key
   *     mode
   * @throws io.kvindex.common.KvIndexException for errors retrying cannot fix
   */
  Scores score(ScoreRequest request);

  /**
   * {@link #score(ScoreRequest)} without waiting for the index: the prompt is hashed on the calling
   * thread, and the future completes when the index has answered (on the Redis client's thread, or
   * at once when nothing is read), so that a caller serving many requests on few threads never
   * blocks one on Redis. Exceptions {@link #score(ScoreRequest)} would throw fail the future.
   */
  default CompletableFuture<Scores> scoreAsync(ScoreRequest request) {
    try {
      return CompletableFuture.completedFuture(score(request));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Scores a prompt given as token ids; {@code lora} is {@code null} for the base model. */
  default Scores score(String model, String lora, int[] tokenIds, Collection<String> pods) {
    return score(ScoreRequest.ofTokens(model, tokenIds, pods).withLora(lora));
  }

  /** Scores a prompt given as precomputed block keys. */
  default Scores score(String model, long[] blockKeys, Collection<String> pods) {
    return score(ScoreRequest.ofBlockKeys(model, blockKeys, pods));
  }

  /**
   * The block keys the index uses for this prompt (one per full block), computed with the model's
   * key mode, exactly as the ingesters compute them.
   *
   * @throws IllegalArgumentException if the model has no configured key mode
   */
  long[] blockKeys(String model, String lora, String cacheSalt, int[] tokenIds);

  /**
   * Chooses one pod with the configured {@link PickPolicy}.
   *
   * @param scores the result of {@link #score} for the request
   * @param candidates the pods the request may go to
   * @param load the pods' current load, for example running requests per pod; with a {@linkplain
   *     KvRouterBuilder#sharedLoad shared load view} the fleet's load (what every router counted
   *     with {@link #started}) is added to it, so pass only what the view does not count ({@link
   *     LoadSignal#none()} for a gateway that counts its requests with {@link #started})
   */
  Pick pick(Scores scores, Collection<String> candidates, LoadSignal load);

  /**
   * Counts a routed request in this router's share of the fleet's load view, when the router was
   * built with {@link KvRouterBuilder#sharedLoad}: every router of the fleet then sees it in its
   * picks (one request on {@code pick.pod()}, and its prompt tokens past the pod's cached prefix as
   * queued tokens) until the returned handle says its first token came back and that it ended. The
   * share lives in Redis, rewritten by this router every third of {@link
   * KvRouterBuilder#sharedLoadTtl}: a router that dies leaves the view within that TTL.
   * Non-blocking and best effort (a failed write is counted, and the next rewrite repairs it).
   * Without a shared load view it counts nothing and returns {@link InFlight#NONE}.
   *
   * @param scores the request's scores, as {@link #pick} was given them
   * @param pick the pick the request was sent by
   * @param promptTokens the prompt's length in tokens (or a negative number: its full blocks')
   */
  default InFlight started(Scores scores, Pick pick, int promptTokens) {
    return InFlight.NONE;
  }

  /**
   * Whether this router was built with {@link KvRouterBuilder#sharedLoad}: its picks then add the
   * fleet's counted load to the load they are given, and {@link #started} counts.
   */
  default boolean sharesLoad() {
    return false;
  }

  /**
   * Explains the {@link #pick} of the same arguments: per candidate, each tier's depth, the load
   * seen, the policy's verdict, and the liveness of the pod record the lookup used. Costs one more
   * read per index group (the candidates' pod records), within the lookup budget: for debugging a
   * routing decision, not for every request.
   */
  Explanation explain(Scores scores, Collection<String> candidates, LoadSignal load);

  /**
   * Records that a request was routed to {@code pod}, so that the next lookups see its prompt
   * blocks there (flagged speculative, to within 15 blocks where another prompt parts from it; see
   * {@link io.kvindex.index.Lookups#speculateAsync}) before the engine reports them. The route
   * expires by itself after {@code ttl}, in Redis, even if this process dies; an entry the engine
   * confirms supersedes it. Recording every route costs lookups nothing more: they read the routes
   * of their prompt's segments beside the segments themselves, whatever was recorded.
   *
   * <p>Best effort and non-blocking: gateways usually ignore the returned stage. It completes with
   * {@code true} once recorded, {@code false} if the pod has no live record (a pod the index does
   * not know gets no routes) or Redis was unavailable (counted in {@code
   * kvindex.router.speculative.writes} as failed), or exceptionally for errors retrying cannot fix.
   *
   * @param model the model the prompt is for
   * @param pod the pod the request went to
   * @param blockKeys the prompt's block keys (see {@link #blockKeys})
   * @param ttl how long the entries live, 1 ms to {@link Lookups#MAX_SPECULATIVE_TTL} (one minute);
   *     a few seconds covers the time an engine takes to report the blocks
   * @throws IllegalArgumentException if the model has no configured key mode, or {@code ttl} is out
   *     of range
   */
  CompletableFuture<Boolean> recordRoute(String model, String pod, long[] blockKeys, Duration ttl);

  /**
   * Closes the loop: what the engine reported for a routed request (vLLM's {@code
   * usage.prompt_tokens_details.cached_tokens}) against what the index predicted for its pod,
   * compared as {@link Observation} says. Each observation is counted ({@code
   * kvindex_router_prediction_error_blocks}, {@code kvindex.router.predictions}); a pod whose
   * recent requests this router finds over-predicted beyond the drift threshold is suspect, and the
   * ingester that owns it is asked, through Redis and at most once per resync interval whoever
   * asks, to purge it and replay what its engine's ring covers; when its engine reports its
   * KV-cache capacity, the owner then infers the engine's evictions (an engine that over-predicts
   * does not publish them all). A pod found under-predicted is only reported: purging it would make
   * it colder. An observation of a pod whose evictions are inferred that carries the prompt's block
   * keys ({@link Observation#of(Scores, Pick, int, int)}) is recorded for the pod's owners, who
   * need to know which blocks each request used. Non-blocking and best effort; never throws for
   * Redis trouble.
   *
   * @return the prediction's error in blocks ({@link Observation#errorBlocks}): positive when the
   *     index thought the pod warmer than the engine found it
   * @throws IllegalArgumentException if the model has no configured key mode (its block size)
   */
  int observe(Observation observation);

  /**
   * Whether observations of {@code pod} should carry the prompt's block keys ({@link
   * Observation#blockKeys()}): the index infers the pod's evictions. For callers that must hash the
   * prompt again to give them (the HTTP service's {@code POST /observe}); what Redis said is reused
   * for a second, and it is false until Redis first answered. Never blocks.
   */
  boolean needsBlockKeys(String model, String pod);

  /**
   * The pods of {@code model} the index considers live now (an ingester keeps their liveness
   * fresh), for callers that do not track their candidate pods themselves. One script per index
   * group; prefer passing candidates on the request path.
   *
   * @return the pod names, or empty if Redis did not answer within the lookup budget
   */
  Optional<List<String>> livePods(String model);

  /** Whether Redis answers a ping within one second; for readiness probes. Never throws. */
  boolean indexReachable();

  /** Closes the Redis connections. */
  @Override
  void close();
}
