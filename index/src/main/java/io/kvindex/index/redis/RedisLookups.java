package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;

import io.kvindex.index.CandidatePods;
import io.kvindex.index.HybridHit;
import io.kvindex.index.IndexConfig;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.redis.PodRecords.PodName;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.KeyValue;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.LongSupplier;

/**
 * The read path of {@link RedisPrefixIndex}: splits a lookup by index group, runs one {@link
 * GroupLookup} per group (all in flight at once) and merges their answers. Holds what this router
 * learned about each group across lookups: the pod records last read and the slots generation they
 * were read at, the group's unlocated heads, which segments overflowed; and the candidates' keys
 * and the models' field prefixes, which cost a SHA-256 each. See the implementation notes of {@link
 * RedisPrefixIndex}. Thread-safe.
 */
final class RedisLookups {
  /** Overflowed segment fields remembered; the set starts afresh past this size. */
  private static final int OVERFLOWED_LIMIT = 1 << 16;

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

  /**
   * A pause in a group's answered reads longer than this, and the next lookup first runs
   * identity.lua, which checks that the node serving the group is the one its data was written on;
   * so do a failed read and a reconnect of the connector. A failover pauses the reads of a router
   * that was not reading (a primary is declared failed after cluster-node-timeout or Sentinel's
   * down-after-milliseconds, 1 s at the least in practice) and fails or reconnects those of one
   * that was, so a router never takes a promoted replica's data, which may lack the last
   * acknowledged writes, on trust before a writer has reset the group (lib.lua, adoptNode).
   */
  static final long VERIFY_AFTER_NANOS = 500_000_000L;

  /** How often, at most, a group's last answered read is noted: 10 ms. */
  static final long ANSWERED_EVERY_NANOS = 10_000_000L;

  /** Per group, System.nanoTime of the last answered read (0: none yet, or a read failed since). */
  private final AtomicLongArray lastAnswered;

  /** Per group, the connector's activations when the lookup last answered began. */
  private final AtomicLongArray answeredOn;

  /** The connector's connection activations: a reconnect may reach another server. */
  private final LongSupplier activations;

  /** Per group, the pod records last read and the slots generation they were read at. */
  final AtomicReferenceArray<PodRecords> records;

  /**
   * Per group, the unlocated heads its last read found: lookups whose prompt has one read block
   * fields.
   */
  private final AtomicReferenceArray<UnlocatedHeads> unlocated;

  /** Segment fields found overflowed: lookups read those segments' block fields instead. */
  private final Map<ByteBuffer, Boolean> overflowed = new ConcurrentHashMap<>();

  /**
   * Per group, the epoch field as the last head read found it (empty for none; null before the
   * first), to see a reset.
   */
  private final AtomicReferenceArray<byte[]> seenEpoch;

  private static final byte[] NO_VALUE = new byte[0];

  private final IndexIdentity identity;

  final Counter recordsRead;
  final Counter rereads;
  final Counter blockReads;
  final Counter overflowReads;
  final Counter nodeUnverified;

  /**
   * A pod's group, field, holder field and digest (its name in speculative routes): lookups need
   * them per candidate.
   */
  record PodKeys(PodName name, int group, byte[] field, byte[] holder, long digest) {}

  /**
   * One index group's candidates of a candidate list, in request order, with their keys and their
   * positions in the request; and the records and decoder layout a lookup of them last resolved,
   * which later lookups take as they are while the group's cached records are the same and the time
   * is within the span those records are valid for.
   */
  static final class GroupCandidates {
    final int g;
    final List<PodKeys> keys = new ArrayList<>();
    private final List<PodMatch> noneAdded = new ArrayList<>();
    private final List<Integer> positionsAdded = new ArrayList<>();
    private int[] positions;
    private PodMatch[] none;

    /** The candidates' digests, ascending, and the candidate each belongs to. */
    private long[] digests;

    private int[] digestOwners;

    volatile ResolvedRecords resolved;

    GroupCandidates(int g) {
      this.g = g;
    }

    private void add(String pod, PodKeys podKeys, int position) {
      keys.add(podKeys);
      noneAdded.add(PodMatch.none(pod));
      positionsAdded.add(position);
    }

    /** Done adding: the arrays lookups read. */
    private void complete() {
      positions = positionsAdded.stream().mapToInt(Integer::intValue).toArray();
      none = noneAdded.toArray(PodMatch[]::new);
      Integer[] order = new Integer[keys.size()];
      for (int i = 0; i < order.length; i++) {
        order[i] = i;
      }
      Arrays.sort(order, (a, b) -> Long.compare(keys.get(a).digest(), keys.get(b).digest()));
      digests = new long[order.length];
      digestOwners = new int[order.length];
      for (int i = 0; i < order.length; i++) {
        digests[i] = keys.get(order[i]).digest();
        digestOwners[i] = order[i];
      }
    }

    /** The candidate whose digest this is, or -1 for none. */
    int candidateOf(long digest) {
      int at = Arrays.binarySearch(digests, digest);
      return at < 0 ? -1 : digestOwners[at];
    }

    /** Each candidate's {@link PodMatch#none}, in order. */
    PodMatch[] none() {
      return none;
    }
  }

  /**
   * The decoder layout of the candidates' live records (a pod with none, or not live, has no
   * streams), as resolved from {@code records} at {@code from}: every candidate's cached record was
   * usable then, and each usable or live verdict stays as it was until {@code until}, the earliest
   * deadline that had not passed (Redis clock, ms).
   */
  record ResolvedRecords(PodRecords records, LookupDecoder.Layout layout, long from, long until) {
    boolean covers(PodRecords current, long nowMs) {
      return current == records && nowMs >= from && nowMs <= until;
    }
  }

  /** A candidate list's groups, ascending: worked out once per list and model. */
  private record CandidatePlan(int size, GroupCandidates[] groups) {}

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
    this.identity = identity;
    this.seenEpoch = new AtomicReferenceArray<>(config.groups());
    this.clock = new ServerClock(reads, keys);
    this.lastAnswered = new AtomicLongArray(config.groups());
    this.answeredOn = new AtomicLongArray(config.groups());
    this.activations = activations;
    this.records = new AtomicReferenceArray<>(config.groups());
    this.unlocated = new AtomicReferenceArray<>(config.groups());
    for (int g = 0; g < config.groups(); g++) {
      unlocated.set(g, UnlocatedHeads.NONE);
    }
    this.recordsRead =
        counter(
            registry,
            IndexMeters.LOOKUP_POD_RECORDS,
            "Pod records read with lookups (a router reads each candidate's about once per"
                + " liveness period, and again after a change to any pod's slots)");
    this.rereads =
        counter(
            registry,
            IndexMeters.LOOKUP_REREADS,
            "Group lookups read a second time because a pod's slots changed since this router"
                + " cached the records (a purge, a restart, a first store)");
    this.blockReads =
        counter(
            registry,
            IndexMeters.LOOKUP_BLOCK_READS,
            "Group lookups that read every block field of the prompt: the group holds blocks"
                + " stored with a parent the index did not know, or the keys do not start at a"
                + " chain's block 0");
    this.overflowReads =
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
  }

  /**
   * Whether the node serving the group may serve its data as it is (identity.lua): true when it is
   * the node the data was written on or one the group's slot moved to whole, false (counted) while
   * no writer has reset the group since a failover, or null when Redis did not answer.
   */
  CompletableFuture<Boolean> verifyNode(int g) {
    return reads
        .<List<Object>>run(
            Scripts.IDENTITY, ScriptOutputType.MULTI, new byte[][] {keys.meta(g), keys.blocks(g)})
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

  /**
   * Whether the group's next read must verify the node: none answered yet, a failed read, a pause
   * or a reconnect since.
   */
  boolean mustVerify(int g) {
    long last = lastAnswered.get(g);
    return last == 0
        || System.nanoTime() - last > VERIFY_AFTER_NANOS
        || answeredOn.get(g) != activations.getAsLong();
  }

  /**
   * A lookup of the group that began at {@code activationsAtStart} was answered. The time is noted
   * at most every {@value #ANSWERED_EVERY_NANOS} ns, so that lookups in a row do not all write the
   * same slot: a pause may be taken for one that much sooner, never later.
   */
  void answered(int g, long activationsAtStart) {
    if (answeredOn.get(g) != activationsAtStart) {
      answeredOn.set(g, activationsAtStart);
    }
    long now = System.nanoTime();
    long last = lastAnswered.get(g);
    if (last == 0 || now - last > ANSWERED_EVERY_NANOS) {
      lastAnswered.set(g, now == 0 ? 1 : now);
    }
  }

  /** A read of the group failed: the next one verifies the node. */
  void unanswered(int g) {
    lastAnswered.set(g, 0);
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
   * @param rule the model's hit rule
   * @param hashBlock tokens per key of the request's keys
   * @param promptTokens the prompt's tokens
   */
  CompletableFuture<LookupResult> lookup(
      LookupRequest request, Executor decode, HybridHit rule, int hashBlock, int promptTokens) {
    HybridPlan hybrid =
        new HybridPlan(
            rule,
            hashBlock,
            promptTokens,
            request.blockKeys(),
            group -> fieldPrefix(request.keyMode(), request.model(), group));
    return lookup(request, decode, hybrid);
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
    GroupCandidates[] groups = plan.groups();
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
      Map<Integer, GroupCandidates> byGroup = new TreeMap<>();
      for (int i = 0; i < pods.size(); i++) {
        PodKeys keys = podKeys(model, pods.get(i));
        byGroup.computeIfAbsent(keys.group(), GroupCandidates::new).add(pods.get(i), keys, i);
      }
      byGroup.values().forEach(GroupCandidates::complete);
      plan = new CandidatePlan(pods.size(), byGroup.values().toArray(GroupCandidates[]::new));
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
      GroupCandidates group, List<byte[]> fields, int[] speculative, Executor decode) {
    int g = group.g;
    List<PodKeys> candidates = group.keys;
    int n = candidates.size();
    byte[][] args = new byte[1 + n + fields.size()][];
    args[0] = ascii(n);
    for (int i = 0; i < n; i++) {
      args[1 + i] = candidates.get(i).field();
    }
    for (int i = 0; i < fields.size(); i++) {
      args[1 + n + i] = fields.get(i);
    }
    return reads
        .<List<Object>>run(
            Scripts.LOOKUP,
            ScriptOutputType.MULTI,
            new byte[][] {keys.pods(g), keys.blocks(g)},
            args)
        .thenApplyAsync(
            outcome ->
                outcome.isDone()
                    ? LookupDecoder.decodeScriptReply(
                        group.none(), outcome.orElseThrow(), speculative, weights)
                    : null,
            decode)
        .toCompletableFuture();
  }

  /**
   * The epoch field a head read found. A change from the last read means Redis lost the group, or a
   * writer reset it after a failover (adoptNode binds a new epoch to the new node history): all
   * this router learned of the group is dropped (the records, the unlocated heads, the overflowed
   * segments), and the change is counted and told. A node history that changed with the same epoch
   * is the same data on another node (its slot moved whole): nothing cached is wrong there.
   *
   * @return whether the group was reset
   */
  boolean identityIs(int g, byte[] epochField) {
    byte[] epoch = epochField == null ? NO_VALUE : epochField;
    if (Arrays.equals(seenEpoch.get(g), epoch)) {
      return false; // as last read: nothing is written, so lookups share these slots read-only
    }
    byte[] epochBefore = seenEpoch.getAndSet(g, epoch);
    // A field read empty before is a first sight (a new index, or one just found reset), not a
    // change: only a value replaced by another (or by none) is.
    if (!changed(epochBefore, epoch)) {
      return false;
    }
    records.set(g, null);
    unlocated.set(g, UnlocatedHeads.NONE);
    overflowed.clear();
    identity.reset(g, "epoch", Bytes.textOrEmpty(epochBefore), Bytes.textOrEmpty(epoch));
    return true;
  }

  private static boolean changed(byte[] before, byte[] now) {
    return before != null && before.length > 0 && !Arrays.equals(before, now);
  }

  /** The group's unlocated heads as this router last read them. */
  UnlocatedHeads unlocatedHeads(int g) {
    return unlocated.get(g);
  }

  /** The group's unlocated heads as a read just found them ({@code value}: the field's value). */
  UnlocatedHeads unlocatedHeads(int g, byte[] value) {
    UnlocatedHeads known = unlocated.get(g);
    if (known.readAs(value)) {
      return known;
    }
    UnlocatedHeads now = UnlocatedHeads.of(value);
    unlocated.set(g, now);
    return now;
  }

  boolean overflowed(byte[] segmentField) {
    // Most indexes never overflow a segment: no field needs hashing then.
    return !overflowed.isEmpty() && overflowed.containsKey(ByteBuffer.wrap(segmentField));
  }

  void markOverflowed(byte[] segmentField) {
    if (overflowed.size() >= OVERFLOWED_LIMIT) {
      overflowed.clear();
    }
    overflowed.put(ByteBuffer.wrap(segmentField), Boolean.TRUE);
  }

  /** The block-field prefix of a model, cached: computing it takes a SHA-256. */
  private byte[] fieldPrefix(KeyMode mode, String model, int cacheGroup) {
    Scope scope = new Scope(mode, model, cacheGroup);
    byte[] cached = prefixCache.get(scope);
    if (cached == null) {
      if (prefixCache.size() >= KEY_CACHE_LIMIT) {
        prefixCache.clear();
      }
      cached = KeySchema.fieldPrefix(KeySchema.scope(mode, model), cacheGroup);
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
      byte[] field = KeySchema.podField(model, pod);
      cached =
          new PodKeys(
              name,
              keys.groupOf(model, pod),
              field,
              KeySchema.holderField(field),
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
        int[] positions = plan.groups()[k].positions;
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
