package io.kvindex.router;

import io.kvindex.common.Check;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.Lookups;
import io.kvindex.index.PodLiveness;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.router.KvRouterBuilder.RouterConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The Redis-backed {@link KvRouter}. Thread-safe.
 *
 * <p>Implementation notes. A score is {@code keys -> lookup -> scores}: the block keys come from
 * the common hashers (engine or token keys, per model), so they equal the ingesters' by
 * construction, and travel on in the scores (so recording a route never hashes the prompt again);
 * the lookup is the index's one-HMGET-per-group read, run under a retry policy whose total budget
 * is the configured lookup budget (RetryPolicy deadline: an attempt still in flight when the budget
 * is spent is abandoned), so no call blocks past the bound. An incomplete lookup (some group's
 * retries exhausted) answers {@link Scores.Outcome#UNAVAILABLE}: a partial answer would make the
 * pods of the silent group look cold. Real errors propagate as the index's typed exceptions.
 *
 * <p>Speculative routes go to the index's speculate script without blocking (one PEXPIRE'd hash per
 * pod, in the pod's group slot); lookups read them in the same script call as the confirmed
 * entries, count them as GPU blocks and flag the pod speculative unless the engine's own entries
 * cover the same depth. build() connects, checks the index's group count and runs one throw-away
 * lookup so that the connection is warm before the first request. The router runs only the scripts
 * ingesters loaded (its index does not load scripts): a missing one answers "index unavailable".
 */
final class RedisKvRouter implements KvRouter {
  private final RouterConfig config;
  private final RedisConnector connector;

  /** The index as opened: noted in at the start, closed with the router. */
  private final PrefixIndex index;

  /** Every request's reads and routes. */
  private final Lookups lookups;

  private final RouterMetrics metrics;
  private final ClosedLoop loop;

  /** The configured models' hashers, built once; other models share {@link #defaultKeyer}. */
  private final Map<String, BlockKeyer> keyers;

  /** The hasher of models not configured, or null when they are refused. */
  private final BlockKeyer defaultKeyer;

  /** Keys adopted from the ingesters' key check, or null when the router does not adopt. */
  private final AdoptedKeys adopted;

  /** The models' cache-group layouts, for scoring hybrid models. */
  private final ModelLayouts layouts;

  /** The load view shared with the fleet's other routers, or null when not shared. */
  private final SharedLoad sharedLoad;

  private RedisKvRouter(RouterConfig config, RedisConnector connector, PrefixIndex index) {
    this.config = config;
    this.connector = connector;
    this.index = index;
    this.lookups = index;
    this.metrics = new RouterMetrics(config.meterRegistry());
    this.loop =
        new ClosedLoop(
            index,
            new LoopMetrics(config.meterRegistry()),
            config.driftWindow(),
            config.driftThreshold(),
            config.resyncInterval(),
            System::nanoTime);
    Map<ModelKeys, BlockKeyer> byMode = new HashMap<>();
    Map<String, BlockKeyer> configured = new HashMap<>();
    config
        .models()
        .forEach(
            (model, keys) -> configured.put(model, byMode.computeIfAbsent(keys, BlockKeyer::new)));
    this.keyers = Map.copyOf(configured);
    ModelKeys defaults = config.defaultModelKeys();
    this.defaultKeyer = defaults == null ? null : byMode.computeIfAbsent(defaults, BlockKeyer::new);
    this.layouts = new ModelLayouts(index, System::nanoTime, config.meterRegistry());
    this.adopted =
        config.adoptEngineKeys()
            ? new AdoptedKeys(index, System::nanoTime, System::currentTimeMillis)
            : null;
    this.sharedLoad =
        config.sharedLoad()
            ? new SharedLoad(
                connector,
                new KeySchema(config.indexName(), config.groups()),
                config.routerId(),
                config.sharedLoadTtl(),
                config.sharedLoadMinAge(),
                config.lookupBudget(),
                System::currentTimeMillis,
                config.meterRegistry())
            : null;
  }

  static RedisKvRouter create(RouterConfig config) {
    RedisConnector.Builder redis =
        RedisConnector.builder().uri(config.redisUri()).meterRegistry(config.meterRegistry());
    if (config.redisTlsCaFile() != null) {
      redis.tlsCaFile(config.redisTlsCaFile());
    }
    RedisConnector connector = redis.build();
    try {
      RetryPolicy lookupPolicy = lookupPolicy(config.lookupBudget());
      var builder =
          PrefixIndex.builder()
              .indexName(config.indexName())
              .groups(config.groups())
              .lookupPolicy(lookupPolicy)
              .loadsScripts(false)
              .redis(connector);
      config.tierWeights().forEach(builder::tierWeight);
      RedisKvRouter router = new RedisKvRouter(config, connector, builder.build());
      router.warmUp();
      router.noteModels();
      return router;
    } catch (RuntimeException e) {
      connector.close();
      throw e;
    }
  }

  /**
   * One throw-away lookup, so that the connection is warm and the Redis clock estimate measured
   * before the first real request. Its answer is ignored.
   */
  private void warmUp() {
    lookups.lookup(
        LookupRequest.of("kvindex-warm-up", KeyMode.ENGINE, new long[] {0L}, List.of("none")));
  }

  /**
   * Notes in the index how this router keys each model, for {@code kvindex inspect}: one small
   * write, whose failure changes nothing for routing (it is not awaited).
   */
  private void noteModels() {
    config
        .models()
        .forEach((model, keys) -> index.noteReaderKeysAsync(model, keys.keySpec().spec()));
    if (config.defaultModelKeys() != null) {
      index.noteReaderKeysAsync(null, config.defaultModelKeys().keySpec().spec());
    }
  }

  /** A few quick attempts, all within {@code budget}. */
  static RetryPolicy lookupPolicy(Duration budget) {
    Duration backoff = Duration.ofMillis(Math.max(1, budget.toMillis() / 5));
    return RetryPolicy.router().toBuilder()
        .initialBackoff(backoff)
        .maxBackoff(backoff.multipliedBy(2))
        .totalBudget(budget)
        .build();
  }

  @Override
  public Scores score(ScoreRequest request) {
    long start = System.nanoTime();
    try {
      BlockKeyer keyer = keyer(request.model());
      long[] keys =
          request.blockKeys() != null
              ? request.blockKeys()
              : keyer.keys(
                  request.model(), request.lora(), request.cacheSalt(), request.tokenIds());
      CompletableFuture<?> load = readLoad(request.model(), keys);
      Scores scores = lookup(request, keyer.config(), keys);
      load.join(); // never fails: a failed read leaves the last view
      metrics.lookup(scores.outcome(), System.nanoTime() - start);
      return scores;
    } catch (RuntimeException e) {
      metrics.lookupFailed(System.nanoTime() - start);
      throw e;
    }
  }

  @Override
  public CompletableFuture<Scores> scoreAsync(ScoreRequest request) {
    long start = System.nanoTime();
    CompletableFuture<Scores> scores;
    try {
      BlockKeyer keyer = keyer(request.model());
      long[] keys =
          request.blockKeys() != null
              ? request.blockKeys()
              : keyer.keys(
                  request.model(), request.lora(), request.cacheSalt(), request.tokenIds());
      ModelKeys config = keyer.config();
      CompletableFuture<?> load = readLoad(request.model(), keys);
      scores =
          keys.length == 0
              ? CompletableFuture.completedFuture(Ranking.none(request, config, keys))
              : lookupAsync(request, config, keys)
                  .thenCombine(load, (r, ignored) -> Ranking.scores(request, config, keys, r));
    } catch (RuntimeException e) {
      scores = CompletableFuture.failedFuture(e);
    }
    return scores.whenComplete(
        (s, e) -> {
          if (e == null) {
            metrics.lookup(s.outcome(), System.nanoTime() - start);
          } else {
            metrics.lookupFailed(System.nanoTime() - start);
          }
        });
  }

  /**
   * Starts reading the shared load view beside the lookup (issued first, on the same connection:
   * one round trip for both), unless a recent read stands; completes within the lookup budget.
   */
  private CompletableFuture<?> readLoad(String model, long[] blockKeys) {
    return sharedLoad == null || blockKeys.length == 0
        ? CompletableFuture.completedFuture(null)
        : sharedLoad.read(model);
  }

  private Scores lookup(ScoreRequest request, ModelKeys keys, long[] blockKeys) {
    if (blockKeys.length == 0) {
      return Ranking.none(request, keys, blockKeys);
    }
    ModelLayouts.Scoring scoring = layouts.scoring(request.model(), keys.blockSize(), keys.eagle());
    LookupRequest lookup =
        LookupRequest.of(request.model(), keys.mode(), blockKeys, request.candidatePods());
    // The index's own blocking reads: they decode on the calling thread.
    LookupResult result =
        scoring.rule() == null
            ? lookups.lookup(lookup)
            : lookups.lookup(lookup, scoring.rule(), promptTokens(request, keys, blockKeys));
    return Ranking.scores(request, keys, blockKeys, result);
  }

  /**
   * A prompt's tokens for a hybrid model's hit (or one whose engines run a draft model), which is
   * vLLM's over its cache groups, at most the prompt less one token; a prompt given as keys is
   * taken to end with its last full block.
   */
  private static int promptTokens(ScoreRequest request, ModelKeys keys, long[] blockKeys) {
    return request.tokenIds() != null
        ? request.tokenIds().length
        : blockKeys.length * keys.blockSize();
  }

  private CompletableFuture<LookupResult> lookupAsync(
      ScoreRequest request, ModelKeys keys, long[] blockKeys) {
    int blockSize = keys.blockSize();
    LookupRequest lookup =
        LookupRequest.of(request.model(), keys.mode(), blockKeys, request.candidatePods());
    ModelLayouts.Scoring scoring = layouts.scoring(request.model(), blockSize, keys.eagle());
    return scoring.rule() == null
        ? lookups.lookupAsync(lookup)
        : lookups.lookupAsync(lookup, scoring.rule(), promptTokens(request, keys, blockKeys));
  }

  /**
   * The model's hasher: nothing is created per request, so any number of distinct model names (with
   * default keys) leaves the router's memory as it was.
   */
  private BlockKeyer keyer(String model) {
    BlockKeyer keyer = keyers.getOrDefault(model, defaultKeyer);
    if (keyer == null) {
      throw config.unconfigured(model);
    }
    return adopted == null ? keyer : adopted.keyer(model, keyer);
  }

  /** Hashers by model this router holds: one per configured model, one for all others; tests. */
  int keyers() {
    return keyers.size() + (defaultKeyer == null ? 0 : 1);
  }

  @Override
  public long[] blockKeys(String model, String lora, String cacheSalt, int[] tokenIds) {
    Check.notBlank(model, "model");
    return keyer(model)
        .keys(model, lora == null || lora.isEmpty() ? null : lora, cacheSalt, tokenIds);
  }

  @Override
  public Pick pick(Scores scores, Collection<String> candidates, LoadSignal load) {
    return config.pickPolicy().pick(scores, candidates, fleet(scores, load));
  }

  /** The load a pick weighs: the caller's, plus the fleet's when the view is shared. */
  private LoadSignal fleet(Scores scores, LoadSignal load) {
    return sharedLoad == null ? load : sharedLoad.fleet(scores.model(), load);
  }

  @Override
  public InFlight started(Scores scores, Pick pick, int promptTokens) {
    Check.notNull(scores, "scores");
    Check.notNull(pick, "pick");
    if (sharedLoad == null) {
      return InFlight.NONE;
    }
    long cached = (long) pick.matchedBlocks() * scores.blockSize();
    long prompt =
        promptTokens >= 0 ? promptTokens : (long) scores.queriedBlocks() * scores.blockSize();
    return sharedLoad.started(scores.model(), pick.pod(), Math.max(0, prompt - cached));
  }

  @Override
  public boolean sharesLoad() {
    return sharedLoad != null;
  }

  /** The shared load view, or null when not shared (for tests). */
  SharedLoad sharedLoad() {
    return sharedLoad;
  }

  @Override
  public Explanation explain(Scores scores, Collection<String> candidates, LoadSignal given) {
    LoadSignal load = fleet(scores, given);
    Pick pick = config.pickPolicy().pick(scores, candidates, load);
    Map<String, Pick.Verdict> verdicts = config.pickPolicy().verdicts(scores, candidates, load);
    List<String> pods = List.copyOf(candidates);
    List<PodLiveness> liveness =
        lookups
            .livenessAsync(scores.model(), pods)
            .completeOnTimeout(
                Optional.empty(), config.lookupBudget().toMillis(), TimeUnit.MILLISECONDS)
            .join()
            .orElse(null);
    List<Explanation.Candidate> out = new ArrayList<>(pods.size());
    for (int i = 0; i < pods.size(); i++) {
      String pod = pods.get(i);
      double l = load.load(pod);
      out.add(
          new Explanation.Candidate(
              pod,
              scores.pod(pod).orElse(PodMatch.none(pod)),
              l > 0 ? l : 0.0,
              verdicts.getOrDefault(pod, Pick.Verdict.NOT_CHOSEN),
              liveness == null ? null : liveness.get(i)));
    }
    return new Explanation(pick, out);
  }

  @Override
  public CompletableFuture<Boolean> recordRoute(
      String model, String pod, long[] blockKeys, Duration ttl) {
    Check.notBlank(pod, "pod");
    Check.notNull(blockKeys, "blockKeys");
    ModelKeys keys = keyer(model).config();
    return lookups
        .speculateAsync(model, keys.mode(), pod, blockKeys, 0, ttl)
        .whenComplete((recorded, error) -> metrics.speculative(error == null && recorded));
  }

  @Override
  public int observe(Observation observation) {
    Check.notNull(observation, "observation");
    return loop.observe(observation, keyer(observation.model()).config());
  }

  @Override
  public boolean needsBlockKeys(String model, String pod) {
    return loop.evictionsInferred(Check.notBlank(model, "model"), Check.notBlank(pod, "pod"));
  }

  /** Whether the closed loop takes the pod's streams for behind their engine (for tests). */
  boolean lagging(String model, String pod) {
    return loop.lagging(model, pod);
  }

  @Override
  public Optional<List<String>> livePods(String model) {
    Check.notBlank(model, "model");
    return lookups.livePodsAsync(model).join();
  }

  @Override
  public boolean indexReachable() {
    try {
      connector.commands().ping().toCompletableFuture().get(1, TimeUnit.SECONDS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      return false;
    }
  }

  @Override
  public void close() {
    try {
      if (sharedLoad != null) {
        sharedLoad.close();
      }
      index.close();
    } finally {
      connector.close();
    }
  }
}
