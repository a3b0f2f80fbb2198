package io.kvindex.index.redis;

import io.kvindex.common.Check;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.CandidatePods;
import io.kvindex.index.HybridHit;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.redis.CandidateGroup.PodKeys;
import io.kvindex.index.redis.PodRecords.PodName;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The read path of {@link RedisPrefixIndex}: splits a lookup by index group, runs one {@link
 * GroupLookup} per group (all in flight at once) and merges their answers; and the reads those
 * make. Holds what this router learned about each group across lookups ({@link GroupState}), and
 * the candidates' keys and the models' field prefixes, which cost a SHA-256 each. See the
 * implementation notes of {@link RedisPrefixIndex}. Thread-safe.
 */
final class RedisLookups {
  /** Candidates' keys and models' prefixes cached; each cache starts afresh past this size. */
  private static final int KEY_CACHE_LIMIT = 1 << 16;

  /**
   * Candidates, summed over the lists whose groups are cached, past which that cache starts afresh.
   */
  private static final int PLAN_CACHE_PODS = 1 << 16;

  final IndexConfig config;

  /** The decoders' tier weights, from {@link #config}. */
  final double[] weights;

  final KeySchema keys;
  final ServerClock clock;
  private final ScriptRunner reads;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;

  /** The connector's connection activations: a reconnect may reach another server. */
  private final LongSupplier activations;

  /** Per group, what this router knows of it. */
  private final GroupState[] states;

  final LookupPlanner.Counters counters;
  private final Counter nodeUnverified;

  /** A candidate list's groups, ascending: worked out once per list and model. */
  private record CandidatePlan(int size, CandidateGroup[] groups) {}

  /** A model and a candidate list, the list compared by identity ({@link CandidatePods#of}). */
  private record PlanKey(String model, CandidatePods pods) {
    @Override
    public boolean equals(Object o) {
      return o instanceof PlanKey k && k.pods == pods && k.model.equals(model);
    }

    @Override
    public int hashCode() {
      return 31 * model.hashCode() + System.identityHashCode(pods);
    }
  }

  private record Scope(KeyMode mode, String model, int cacheGroup) {}

  private final Map<PodName, PodKeys> podCache = new ConcurrentHashMap<>();
  private final Map<Scope, byte[]> prefixCache = new ConcurrentHashMap<>();
  private final Map<PlanKey, CandidatePlan> planCache = new ConcurrentHashMap<>();
  private final AtomicInteger planPods = new AtomicInteger();

  /** The rule last made for a layout ({@link #rule}). */
  private volatile HybridHit lastRule;

  RedisLookups(
      IndexConfig config,
      KeySchema keys,
      ScriptRunner reads,
      RedisClusterAsyncCommands<byte[], byte[]> commands,
      MeterRegistry registry,
      IndexIdentity identity,
      LongSupplier activations) {
    this.config = config;
    this.weights = LookupDecoder.weights(config);
    this.keys = keys;
    this.reads = reads;
    this.commands = commands;
    this.clock = new ServerClock(reads, keys);
    this.activations = activations;
    this.states =
        GroupState.of(
            config.groups(),
            (g, before, now) ->
                identity.reset(g, "epoch", Bytes.textOrEmpty(before), Bytes.textOrEmpty(now)));
    Counter recordsRead =
        counter(
            registry,
            IndexMeters.LOOKUP_POD_RECORDS,
            "Pod records read with lookups (a router reads each candidate's about once per"
                + " liveness period, and again after a change to any pod's slots)");
    Counter rereads =
        counter(
            registry,
            IndexMeters.LOOKUP_REREADS,
            "Group lookups read a second time because a pod's slots changed since this router"
                + " cached the records (a purge, a restart, a first store)");
    Counter blockReads =
        counter(
            registry,
            IndexMeters.LOOKUP_BLOCK_READS,
            "Group lookups that read every block field of the prompt: the group holds blocks"
                + " stored with a parent the index did not know, or the keys do not start at a"
                + " chain's block 0");
    Counter overflowReads =
        counter(
            registry,
            IndexMeters.LOOKUP_OVERFLOW_READS,
            "Group lookups that read an overflowed segment or span (more branches than"
                + " segmentSlots allows) as its 16 or 256 block fields, in the same HMGET as the"
                + " other segments");
    this.nodeUnverified =
        counter(
            registry,
            IndexMeters.LOOKUP_NODE_UNVERIFIED,
            "Group lookups answered 'index unavailable' because the node serving the group is not"
                + " the one its data was written on (a failover) and no writer has reset it yet");
    this.counters = new LookupPlanner.Counters(recordsRead, rereads, blockReads, overflowReads);
  }

  /** What this router knows of group {@code g}. */
  GroupState state(int g) {
    return states[g];
  }

  /**
   * Whether the node serving the group may serve its data as it is (identity.lua): true when it is
   * the node the data was written on or one the group's slot moved to whole, false (counted) while
   * no writer has reset the group since a failover, or null when Redis did not answer.
   */
  CompletableFuture<Boolean> verifyNode(int g) {
    return new IdentityCall(g)
        .on(keys)
        .<List<Object>>run(reads, ScriptOutputType.MULTI)
        .thenApply(
            outcome -> {
              if (!outcome.isDone()) {
                return null;
              }
              if (IndexIdentity.Reply.of(outcome.orElseThrow()).trusted()) {
                return Boolean.TRUE;
              }
              nodeUnverified.increment();
              return Boolean.FALSE;
            })
        .toCompletableFuture();
  }

  /** The connector's activations now, for {@link #answered}. */
  long activations() {
    return activations.getAsLong();
  }

  private Counter counter(MeterRegistry registry, String name, String description) {
    return Counter.builder(name)
        .description(description)
        .tag("index", config.indexName())
        .register(registry);
  }

  /**
   * Looks up every group holding candidates, in parallel, and merges the answers.
   *
   * @param decode where the replies are decoded (the I/O thread when {@code Runnable::run})
   */
  CompletableFuture<LookupResult> lookup(LookupRequest request, Executor decode) {
    return lookup(request, decode, null);
  }

  /**
   * A hybrid model's lookup: per index group, the full-attention group's read with the other
   * groups' block fields beside its head read, combined by the model's hit rule.
   *
   * @param rule the model's hit rule, its layout scorable ({@link #scorable})
   * @param promptTokens the prompt's tokens
   */
  CompletableFuture<LookupResult> lookup(
      LookupRequest request, Executor decode, HybridHit rule, int promptTokens) {
    Check.notNull(request, "request");
    Check.atLeast(promptTokens, 0, "promptTokens");
    HybridPlan hybrid =
        new HybridPlan(
            rule,
            rule.hashBlockSize(),
            promptTokens,
            request.blockKeys(),
            group -> fieldPrefix(request.keyMode(), request.model(), group),
            request.keyMode() == KeyMode.ENGINE);
    return lookup(request, decode, hybrid);
  }

  /**
   * The rule of a layout that can be scored with keys of {@code hashBlockSize} tokens: the one last
   * made when it is the same layout (a model's lookups ask by the same one), a new one otherwise.
   */
  HybridHit rule(CacheLayout layout, int hashBlockSize) {
    HybridHit last = lastRule;
    if (last != null && last.hashBlockSize() == hashBlockSize && last.layout().equals(layout)) {
      return last;
    }
    scorable(layout.unscorable(hashBlockSize));
    HybridHit rule = new HybridHit(layout, hashBlockSize);
    lastRule = rule;
    return rule;
  }

  /** Throws an IllegalArgumentException saying why when the rule's layout cannot be scored. */
  static void scorable(HybridHit rule) {
    scorable(rule.unscorable());
  }

  private static void scorable(Optional<String> unscorable) {
    unscorable.ifPresent(
        why -> {
          throw new IllegalArgumentException("the layout cannot be scored: " + why);
        });
  }

  private CompletableFuture<LookupResult> lookup(
      LookupRequest request, Executor decode, HybridPlan hybrid) {
    CandidatePlan plan = plan(request.model(), CandidatePods.of(request.candidatePods()));
    if (request.length() == 0 || plan.groups().length == 0) {
      PodMatch[] none = new PodMatch[plan.size()];
      int i = 0;
      for (String pod : request.candidatePods()) {
        none[i++] = PodMatch.none(pod);
      }
      return CompletableFuture.completedFuture(LookupResult.inOrder(none, true));
    }
    Prompt prompt =
        hybrid == null
            ? new Prompt(
                fieldPrefix(request.keyMode(), request.model(), request.cacheGroup()),
                request.blockKeys())
            : new Prompt(
                fieldPrefix(request.keyMode(), request.model(), hybrid.fullGroup()),
                hybrid.fullKeys());
    CandidateGroup[] groups = plan.groups();
    if (groups.length == 1) {
      // One group's candidates are the request's, in its order.
      return new GroupLookup(this, groups[0], prompt, decode, hybrid)
          .run()
          .thenApply(part -> merge(plan, new PodMatch[][] {part}));
    }
    @SuppressWarnings("unchecked")
    CompletableFuture<PodMatch[]>[] parts = new CompletableFuture[groups.length];
    for (int k = 0; k < groups.length; k++) {
      parts[k] = new GroupLookup(this, groups[k], prompt, decode, hybrid).run();
    }
    return CompletableFuture.allOf(parts)
        .thenApply(
            x -> {
              PodMatch[][] answers = new PodMatch[parts.length][];
              for (int k = 0; k < parts.length; k++) {
                answers[k] = parts[k].join();
              }
              return merge(plan, answers);
            });
  }

  /** The candidates' groups with their keys, worked out once per candidate list and model. */
  private CandidatePlan plan(String model, CandidatePods pods) {
    PlanKey key = new PlanKey(model, pods);
    CandidatePlan plan = planCache.get(key);
    if (plan == null) {
      Map<Integer, CandidateGroup> byGroup = new TreeMap<>();
      for (int i = 0; i < pods.size(); i++) {
        PodKeys keys = podKeys(model, pods.get(i));
        byGroup.computeIfAbsent(keys.group(), CandidateGroup::new).add(pods.get(i), keys, i);
      }
      byGroup.values().forEach(CandidateGroup::complete);
      plan = new CandidatePlan(pods.size(), byGroup.values().toArray(CandidateGroup[]::new));
      int weight = 1 + pods.size(); // an empty list under many model names counts too
      if (planPods.addAndGet(weight) > PLAN_CACHE_PODS) {
        planCache.clear();
        planPods.set(weight);
      }
      planCache.put(key, plan);
    }
    return plan;
  }

  /** One plain HMGET of a group's blocks hash. */
  CompletableFuture<RedisOutcome<List<KeyValue<byte[], byte[]>>>> read(int g, byte[][] fields) {
    return reads
        .calls()
        .<List<KeyValue<byte[], byte[]>>>call(
            "lookup", () -> commands.hmget(keys.blocks(g), fields))
        .toCompletableFuture();
  }

  /**
   * A head read's two replies: the blocks hash's fields, and the speculative routes of the prompt's
   * first segments and spans (null when none was asked).
   */
  record HeadReply(List<KeyValue<byte[], byte[]>> blocks, List<KeyValue<byte[], byte[]>> routes) {}

  /**
   * A head read: one HMGET of the group's blocks hash beside one HMGET of its speculative routes (a
   * separate key: routers may not write the blocks hash) by the same segment fields, sent together
   * and retried together as one call. Not atomic: a route recorded in between is as if recorded
   * just after the lookup.
   */
  CompletableFuture<RedisOutcome<HeadReply>> readWithRoutes(
      int g, byte[][] fields, byte[][] routeFields) {
    return reads
        .calls()
        .<HeadReply>call(
            "lookup",
            () ->
                routeFields.length == 0
                    ? commands.hmget(keys.blocks(g), fields).thenApply(b -> new HeadReply(b, null))
                    : commands
                        .hmget(keys.blocks(g), fields)
                        .thenCombine(
                            commands.hmget(keys.speculativeRoutes(g), routeFields), HeadReply::new))
        .toCompletableFuture();
  }

  /**
   * The lookup in one call (lookup.lua), when the slots generation moved between two reads of one
   * lookup; {@code speculative} is what the head read found of the routes (null for none).
   */
  CompletableFuture<PodMatch[]> scriptLookup(
      CandidateGroup group, List<byte[]> fields, int[] speculative, Executor decode) {
    return LookupCall.of(group, fields)
        .on(keys)
        .<List<Object>>run(reads, ScriptOutputType.MULTI)
        .thenApplyAsync(
            outcome ->
                outcome.isDone()
                    ? LookupDecoder.decodeScriptReply(
                        group.none(), outcome.orElseThrow(), speculative, weights)
                    : null,
            decode)
        .toCompletableFuture();
  }

  /** The block-field prefix of a model, cached: computing it takes a SHA-256. */
  private byte[] fieldPrefix(KeyMode mode, String model, int cacheGroup) {
    Scope scope = new Scope(mode, model, cacheGroup);
    byte[] cached = prefixCache.get(scope);
    if (cached == null) {
      if (prefixCache.size() >= KEY_CACHE_LIMIT) {
        prefixCache.clear();
      }
      cached = HashFields.fieldPrefix(HashFields.scope(mode, model), cacheGroup);
      prefixCache.put(scope, cached);
    }
    return cached;
  }

  /** A candidate's keys, cached: every lookup needs them. */
  PodKeys podKeys(String model, String pod) {
    PodName name = new PodName(model, pod);
    PodKeys cached = podCache.get(name);
    if (cached == null) {
      if (podCache.size() >= KEY_CACHE_LIMIT) {
        podCache.clear();
      }
      byte[] field = HashFields.podField(model, pod);
      cached =
          new PodKeys(
              name,
              keys.groupOf(model, pod),
              field,
              HashFields.holderField(field),
              KeySchema.podDigest(field));
      podCache.put(name, cached);
    }
    return cached;
  }

  /**
   * The groups' answers (null for a group that stayed unavailable) in request order; the result is
   * incomplete, without the unanswered groups' candidates, when some group did not answer.
   */
  private static LookupResult merge(CandidatePlan plan, PodMatch[][] parts) {
    if (parts.length == 1 && parts[0] != null) {
      return LookupResult.inOrder(parts[0], true);
    }
    PodMatch[] all = new PodMatch[plan.size()];
    int answered = 0;
    for (int k = 0; k < parts.length; k++) {
      if (parts[k] != null) {
        int[] positions = plan.groups()[k].positions();
        for (int i = 0; i < parts[k].length; i++) {
          all[positions[i]] = parts[k][i];
        }
        answered += parts[k].length;
      }
    }
    if (answered == all.length) {
      return LookupResult.inOrder(all, true);
    }
    PodMatch[] some = new PodMatch[answered];
    int at = 0;
    for (PodMatch match : all) {
      if (match != null) {
        some[at++] = match;
      }
    }
    return LookupResult.inOrder(some, false);
  }
}
