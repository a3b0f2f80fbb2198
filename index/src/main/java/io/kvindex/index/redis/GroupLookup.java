package io.kvindex.index.redis;

import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.redis.RedisLookups.GroupCandidates;
import io.kvindex.index.redis.RedisLookups.HeadReply;
import io.kvindex.index.redis.RedisLookups.PodKeys;
import io.kvindex.index.redis.RedisLookups.ResolvedRecords;
import io.lettuce.core.KeyValue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One group's part of one lookup: a loop of turns, each choosing a read plan from what the router
 * knows of the group and the prompt, making that one read, and either answering or learning what
 * the next turn must read instead. Not thread-safe: its turns run one after another.
 *
 * <p>The plans:
 *
 * <ul>
 *   <li><b>script</b>: lookup.lua, when the slots generation moved between two reads of one lookup
 *       (it reads everything in one call);
 *   <li><b>head</b>: one HMGET of the slots generation, the unlocated heads, the records of the
 *       candidates whose cached record is not usable, and the prompt: its first block's field and
 *       its segment and span fields (an overflowed one's block fields in its place) while none of
 *       its segment fields is an unlocated head (a block under which the group holds blocks of
 *       unknown position) and the keys start at the chain's block 0, else its first {@value
 *       #FIRST_CHUNK} block fields; beside it, one HMGET of the group's speculative routes by the
 *       prompt's segment and span fields up to {@link
 *       RedisPrefixIndex#SPECULATIVE_BLOCKS_PER_ROUTE} blocks, which routes are kept by; for a
 *       hybrid model, the other cache groups' fields in the same HMGET ({@link HybridPlan}: their
 *       segments by the same heads while the prompt is read by segments, else their block fields);
 *   <li><b>chunk</b>: the prompt's next block fields (4 times the last read, at most {@value
 *       #MAX_CHUNK}) with the slots generation, while some candidate still matches.
 * </ul>
 *
 * After a pause in the group's answered reads ({@link RedisLookups#VERIFY_AFTER_NANOS}), a failed
 * read or a reconnect, the first turn is preceded by identity.lua, which verifies the node serving
 * the group.
 *
 * <p>A head read sends the next turn elsewhere when its answer demands it: the generation moved
 * since the records were cached (head, every record read afresh), the keys do not start at the
 * chain's block 0 (head by block fields), an unlocated head of the prompt appeared or a segment or
 * span overflowed since (head by the new plan).
 */
final class GroupLookup {
  /** Block fields of a first read by block fields: one round trip up to 4 096 tokens. */
  static final int FIRST_CHUNK = 256;

  static final int MAX_CHUNK = 4096;

  /** Fields every head read starts with: the slots generation, the unlocated heads, the epoch. */
  private static final int READ_HEADER = 3;

  /** Turns after which a lookup reads everything with one script call (never reached in use). */
  private static final int MAX_TURNS = 32;

  /**
   * How far ahead of the Redis clock a speculative route's deadline may lie and still count: as far
   * as a route may last, plus a second for this router's estimate of that clock. A deadline further
   * ahead was not written by speculate.lua (a router's Redis user may write spec: keys directly).
   */
  private static final long MAX_ROUTE_AHEAD_MS = PrefixIndex.MAX_SPECULATIVE_TTL.toMillis() + 1000;

  /** A turn's result: the answer (null when Redis stayed unavailable), or another turn. */
  private record Step(boolean done, PodMatch[] matches) {
    static final Step AGAIN = new Step(false, null);

    static Step answer(PodMatch[] matches) {
      return new Step(true, matches);
    }
  }

  private final RedisLookups ctx;
  private final GroupCandidates group;
  private final int g;
  private final List<PodKeys> candidates;
  private final Prompt prompt;

  /** Where the replies' continuations run. */
  private final Executor decode;

  /** The next head read reads every candidate's record (the generation moved since cached). */
  private boolean allFresh;

  /** The next turn runs lookup.lua. */
  private boolean script;

  /** The node serving the group was verified in this lookup (after a pause in its reads). */
  private boolean verified;

  /** The connector's activations when this lookup began. */
  private final long activationsAtStart;

  private LookupDecoder decoder;

  /** A hybrid model's other groups, read with the head read (null for a single group). */
  private final HybridPlan hybrid;

  /** The values of {@link HybridPlan#fields} the last head read found, and its layout. */
  private List<byte[]> hybridValues;

  /** How many of the last head read's fields were the other groups', and whether by segments. */
  private int hybridFields;

  private boolean hybridBySegments;

  /** One of the other groups' segments overflowed: this lookup reads their block fields. */
  private boolean hybridByBlockFields;

  private LookupDecoder.Layout layout;

  /** Per candidate, the blocks its speculative routes give it, as the last head read found. */
  private int[] speculative;

  private long generation;
  private int decodedBlocks;
  private int turns;

  /**
   * @param group the group's candidates, in request order, with their keys
   */
  GroupLookup(RedisLookups ctx, GroupCandidates group, Prompt prompt, Executor decode) {
    this(ctx, group, prompt, decode, null);
  }

  /**
   * @param hybrid a hybrid model's other groups, read beside the full-attention group's head read
   *     and combined with its answer; null for a model of one group
   */
  GroupLookup(
      RedisLookups ctx, GroupCandidates group, Prompt prompt, Executor decode, HybridPlan hybrid) {
    this.hybrid = hybrid;
    this.ctx = ctx;
    this.activationsAtStart = ctx.activations();
    this.decode = decode;
    this.group = group;
    this.g = group.g;
    this.prompt = prompt;
    this.candidates = group.keys;
  }

  /** The group's candidates' matches in their order, or null when Redis stayed unavailable. */
  CompletableFuture<PodMatch[]> run() {
    return turn();
  }

  private CompletableFuture<PodMatch[]> turn() {
    CompletableFuture<Step> step;
    if (!verified && ctx.mustVerify(g)) {
      // A pause in this group's reads, which every failover makes: is the node serving it the one
      // its data was written on? Until a writer has reset it, nothing it holds is credited.
      return ctx.verifyNode(g)
          .thenCompose(
              same -> {
                if (!Boolean.TRUE.equals(same)) {
                  ctx.unanswered(g);
                  return CompletableFuture.completedFuture(null);
                }
                verified = true;
                return turn();
              });
    }
    if (script && hybrid != null && turns < MAX_TURNS) {
      // The other groups' fields were read with the head: read everything again, together.
      script = false;
      decoder = null;
      allFresh = true;
      ctx.rereads.increment();
    }
    if (script || ++turns > MAX_TURNS) {
      step =
          ctx.scriptLookup(group, prompt.blockFields(), speculative, decode)
              .thenApply(m -> Step.answer(m == null || layout == null ? m : answer(m)));
    } else if (decoder != null) {
      step = readChunk();
    } else {
      step = readHead();
    }
    return step.thenCompose(
        s -> {
          if (!s.done()) {
            return turn();
          }
          if (s.matches() != null) {
            ctx.answered(g, activationsAtStart);
          } else {
            ctx.unanswered(g);
          }
          return CompletableFuture.completedFuture(s.matches());
        });
  }

  private CompletableFuture<Step> readHead() {
    CompletableFuture<Long> now = ctx.clock.nowMillis(g);
    PodRecords known = allFresh ? null : ctx.records.get(g);
    // A candidate's cached record serves while the group's slots generation is unchanged and the
    // record's deadline (only ever moved later, except by changes that move the generation) has
    // not passed; the others are read with the blocks.
    long nowMs = now.isDone() ? now.join() : Long.MAX_VALUE;
    // The records the last lookup resolved, while they stand, need no check pod by pod.
    ResolvedRecords resolved = group.resolved;
    List<Integer> fresh = new ArrayList<>();
    if (resolved == null || !resolved.covers(known, nowMs)) {
      for (int i = 0; i < candidates.size(); i++) {
        if (known == null || !known.usable(candidates.get(i).name(), nowMs)) {
          fresh.add(i);
        }
      }
    }
    if (!fresh.isEmpty()) {
      ctx.recordsRead.increment(fresh.size());
    }
    boolean bySegment = !prompt.byBlockFields() && !ctx.unlocatedHeads(g).touches(prompt);
    List<byte[]> payload =
        bySegment
            ? segmentPlan()
            : prompt.blockFields().subList(0, Math.min(prompt.length(), FIRST_CHUNK));
    if (!bySegment) {
      ctx.blockReads.increment();
    } else if (payload.size() > 1 + prompt.segments()) {
      ctx.overflowReads.increment();
    }
    hybridBySegments = hybrid != null && bySegment && hybrid.segmentable() && !hybridByBlockFields;
    List<byte[]> extra = hybrid == null ? List.of() : hybrid.fields(hybridBySegments, prompt);
    hybridFields = extra.size();
    byte[][] fields = new byte[READ_HEADER + fresh.size() + payload.size() + extra.size()][];
    fields[0] = KeySchema.SLOTS_GENERATION_FIELD;
    fields[1] = KeySchema.UNLOCATED_HEADS_FIELD;
    fields[2] = KeySchema.EPOCH_FIELD;
    for (int i = 0; i < fresh.size(); i++) {
      fields[READ_HEADER + i] = candidates.get(fresh.get(i)).holder();
    }
    for (int i = 0; i < payload.size(); i++) {
      fields[READ_HEADER + fresh.size() + i] = payload.get(i);
    }
    for (int i = 0; i < extra.size(); i++) {
      fields[READ_HEADER + fresh.size() + payload.size() + i] = extra.get(i);
    }
    return ctx.readWithRoutes(g, fields, routeFields())
        .thenCombineAsync(
            now,
            (reply, ms) ->
                reply.isDone()
                    ? absorb(
                        headRead(reply.orElseThrow(), fresh, known, ms), known, bySegment, payload)
                    : Step.answer(null),
            decode);
  }

  /** What a head read says: the answer, or which plan the next turn takes. */
  private Step absorb(HeadRead read, PodRecords known, boolean bySegment, List<byte[]> payload) {
    if (ctx.identityIs(g, read.epoch())) {
      // Redis lost the group or failed over since the last read: nothing cached stands.
      allFresh = true;
      return Step.AGAIN;
    }
    if (read.layout() == null) {
      // Some pod's slots changed since the cached records were read: read every record afresh.
      ctx.rereads.increment();
      ctx.records.set(g, new PodRecords(read.generation()));
      allFresh = true;
      return Step.AGAIN;
    }
    allFresh = false;
    if (read.learned() != known) {
      ctx.records.accumulateAndGet(g, read.learned(), PodRecords::newer);
    }
    List<byte[]> replied = read.values();
    if (bySegment && !startsChain(replied.get(0))) {
      prompt.readByBlockFields(); // the keys do not start at the chain's block 0
      return Step.AGAIN;
    }
    BlockValues values;
    boolean unlocated = ctx.unlocatedHeads(g, read.unlocatedHeads()).touches(prompt);
    if (bySegment) {
      values = unlocated ? null : blockValues(payload, replied);
      if (values == null) {
        // Unlocated blocks past the prompt's heads, or a segment that overflowed since: the next
        // plan reads around them.
        return Step.AGAIN;
      }
    } else {
      values = new BlockValues(replied.size());
      replied.forEach(values::addField);
    }
    if (hybridBySegments && HybridPlan.overflowed(hybridValues)) {
      hybridByBlockFields = true; // the next head read takes the other groups' block fields
      return Step.AGAIN;
    }
    decoder = new LookupDecoder(group.none(), read.layout(), ctx.weights);
    layout = read.layout();
    decoder.speculate(speculative);
    decoder.addValues(values);
    generation = read.generation();
    decodedBlocks = values.size();
    return finished() ? Step.answer(answer(decoder.matches())) : Step.AGAIN;
  }

  /** The matches of the read groups: the full-attention group's, combined with the others'. */
  private PodMatch[] answer(PodMatch[] matches) {
    return hybrid == null
        ? matches
        : hybrid.combine(matches, layout, hybridValues, hybridBySegments, prompt);
  }

  private boolean finished() {
    return !decoder.open() || decodedBlocks >= prompt.length();
  }

  /**
   * The prompt's next block fields with the slots generation, in one HMGET; if the generation moved
   * since the head read (a purge, a restart, a first store), the next turn reads everything with
   * one script call rather than mix two states of the index.
   */
  private CompletableFuture<Step> readChunk() {
    int from = decodedBlocks;
    int to = Math.min(prompt.length(), from + Math.min(from * 4, MAX_CHUNK));
    List<byte[]> blockFields = prompt.blockFields();
    byte[][] fields = new byte[1 + to - from][];
    fields[0] = KeySchema.SLOTS_GENERATION_FIELD;
    for (int i = from; i < to; i++) {
      fields[1 + i - from] = blockFields.get(i);
    }
    return ctx.read(g, fields)
        .thenApplyAsync(
            outcome -> {
              if (!outcome.isDone()) {
                return Step.answer(null);
              }
              List<KeyValue<byte[], byte[]>> reply = outcome.orElseThrow();
              if (Bytes.decimal(value(reply.get(0))) != generation) {
                script = true;
                return Step.AGAIN;
              }
              BlockValues values = new BlockValues(to - from);
              for (int i = 1; i < reply.size(); i++) {
                values.addField(value(reply.get(i)));
              }
              decoder.addValues(values);
              decodedBlocks = to;
              return finished() ? Step.answer(answer(decoder.matches())) : Step.AGAIN;
            },
            decode);
  }

  /**
   * The fields a segment read asks for: the first block's field (its locator shows whether the keys
   * start at a segment head), then each segment's field, or its block fields if overflowed.
   */
  private List<byte[]> segmentPlan() {
    List<byte[]> plan = new ArrayList<>(1 + prompt.segments());
    plan.add(prompt.firstBlockField());
    for (int k = 0; k < prompt.segments(); k++) {
      byte[] segment = prompt.segmentField(k);
      if (ctx.overflowed(segment)) {
        plan.addAll(prompt.blockFields().subList(prompt.segmentStart(k), prompt.segmentEnd(k)));
      } else {
        plan.add(segment);
      }
    }
    return plan;
  }

  /**
   * The prompt's block values from a read by {@link #segmentPlan}, or null if a segment read was
   * found overflowed (remembered, so the next plan reads its block fields).
   */
  private BlockValues blockValues(List<byte[]> plan, List<byte[]> read) {
    BlockValues values = new BlockValues(prompt.length());
    int at = 1;
    for (int k = 0; k < prompt.segments(); k++) {
      int start = prompt.segmentStart(k);
      int end = prompt.segmentEnd(k);
      if (plan.get(at) != prompt.segmentField(k)) {
        for (int i = start; i < end; i++) {
          values.addField(read.get(at++));
        }
        continue;
      }
      byte[] segment = read.get(at++);
      if (segment != null && segment.length == 1 && segment[0] == 'O') {
        ctx.markOverflowed(prompt.segmentField(k));
        return null;
      }
      SegmentCodec.read(values, values.extend(end - start), segment, prompt.keys(), start, end);
    }
    return values;
  }

  /**
   * Whether a first block's value allows a segment read: absent (no one holds it), or located at
   * the chain's position 0. A value of odd length starts with its locator: head key, position; one
   * of even length is unlocated, stored under a parent, so the keys start past the chain's block 0.
   */
  private static boolean startsChain(byte[] first) {
    if (first == null) {
      return true;
    }
    if (first.length % 2 == 0) {
      return false;
    }
    int at = LookupDecoder.LOCATOR_BYTES - 3;
    return (first[at] | first[at + 1] | first[at + 2]) == 0;
  }

  /**
   * A head read: the slots generation, the unlocated heads, the decoder layout of the candidates'
   * records (null when the cached ones are stale and not all were read), the block values, and the
   * records read, to cache.
   */
  private record HeadRead(
      long now,
      long generation,
      byte[] unlocatedHeads,
      byte[] epoch,
      LookupDecoder.Layout layout,
      List<byte[]> values,
      PodRecords learned) {}

  private HeadRead headRead(HeadReply outcome, List<Integer> fresh, PodRecords known, long nowMs) {
    List<KeyValue<byte[], byte[]>> reply = outcome.blocks();
    speculative = outcome.routes() == null ? null : speculativeDepths(outcome.routes(), nowMs);
    long gen = Bytes.decimal(value(reply.get(0)));
    byte[] unlocatedHeads = value(reply.get(1));
    byte[] epoch = value(reply.get(2));
    boolean same = known != null && known.generation() == gen;
    PodRecords learned = !same ? new PodRecords(gen) : fresh.isEmpty() ? known : known.copy();
    for (int i = 0; i < fresh.size(); i++) {
      learned.put(candidates.get(fresh.get(i)).name(), value(reply.get(READ_HEADER + i)));
    }
    ResolvedRecords resolved = null;
    if (same || fresh.size() == candidates.size()) {
      resolved = group.resolved;
      if (resolved == null || !resolved.covers(learned, nowMs)) {
        resolved = resolve(learned, nowMs);
      }
    }
    int extra = hybridFields;
    List<byte[]> values = new ArrayList<>(reply.size() - READ_HEADER - fresh.size() - extra);
    for (int i = READ_HEADER + fresh.size(); i < reply.size() - extra; i++) {
      values.add(value(reply.get(i)));
    }
    if (hybrid != null) {
      List<byte[]> others = new ArrayList<>(extra);
      for (int i = reply.size() - extra; i < reply.size(); i++) {
        others.add(value(reply.get(i)));
      }
      hybridValues = others;
    }
    return new HeadRead(
        nowMs,
        gen,
        unlocatedHeads,
        epoch,
        resolved == null ? null : resolved.layout(),
        values,
        learned);
  }

  /**
   * The decoder layout of the candidates' live records in {@code learned} at {@code nowMs} (Redis
   * clock); kept for the lookups after this one when every candidate's record was usable (none need
   * reading again), for as long as no deadline passes.
   */
  private ResolvedRecords resolve(PodRecords learned, long nowMs) {
    List<byte[]> live = new ArrayList<>(candidates.size());
    boolean allUsable = true;
    long until = Long.MAX_VALUE;
    for (PodKeys keys : candidates) {
      allUsable &= learned.usable(keys.name(), nowMs);
      byte[] v = learned.get(keys.name());
      boolean alive = v != null && v.length >= 8 && Bytes.deadline(v) >= nowMs;
      live.add(alive ? v : null);
      if (alive) {
        until = Math.min(until, Bytes.deadline(v));
      }
    }
    ResolvedRecords resolved =
        new ResolvedRecords(learned, LookupDecoder.Layout.of(live, true), nowMs, until);
    if (allUsable) {
      group.resolved = resolved;
    }
    return resolved;
  }

  /**
   * The segment and span fields the prompt's speculative routes are kept by: those of its first
   * {@link RedisPrefixIndex#SPECULATIVE_BLOCKS_PER_ROUTE} blocks.
   */
  private byte[][] routeFields() {
    int n =
        Prompt.segmentCount(
            Math.min(prompt.length(), RedisPrefixIndex.SPECULATIVE_BLOCKS_PER_ROUTE));
    byte[][] fields = new byte[n][];
    for (int k = 0; k < n; k++) {
      fields[k] = prompt.segmentField(k);
    }
    return fields;
  }

  /**
   * Per candidate, the blocks its routes give it (null when no route names one): from each of its
   * routes in the prompt's segment or span k, the segment's head (the field is named after it, and
   * keys are a chain: the same key at a position means the same prefix), then each kept key of the
   * route there that the prompt has too, in order. Routes whose deadline passed ({@code nowMs},
   * Redis clock) count for nothing. The work is one pass over the values read, whatever the prompt
   * or the candidates.
   */
  private int[] speculativeDepths(List<KeyValue<byte[], byte[]>> routes, long nowMs) {
    int[] depths = null;
    long[] keys = prompt.keys();
    for (int k = 0; k < routes.size(); k++) {
      byte[] v = value(routes.get(k));
      int start = prompt.segmentStart(k);
      int end = prompt.segmentEnd(k);
      for (int at = 0; v != null && at + 16 <= v.length; ) {
        int reach = ((v[at + 14] & 0xff) << 8) | (v[at + 15] & 0xff);
        int kept =
            (reach + RedisPrefixIndex.SPECULATIVE_KEY_EVERY - 1)
                / RedisPrefixIndex.SPECULATIVE_KEY_EVERY;
        int c = group.candidateOf(Bytes.longAt(v, at));
        long deadline = Bytes.deadline6At(v, at + 8);
        // A deadline further ahead than any route may last was not written by speculate.lua.
        if (c >= 0
            && deadline >= nowMs
            && deadline <= nowMs + MAX_ROUTE_AHEAD_MS
            && at + 16 + 8 * kept <= v.length) {
          int depth = start + 1;
          for (int i = 0; i < kept; i++) {
            int pos = start + Math.min((i + 1) * RedisPrefixIndex.SPECULATIVE_KEY_EVERY, reach) - 1;
            if (pos >= end || keys[pos] != Bytes.longAt(v, at + 16 + 8 * i)) {
              break;
            }
            depth = pos + 1;
          }
          if (depths == null) {
            depths = new int[candidates.size()];
          }
          depths[c] = Math.max(depths[c], depth);
        }
        at += 16 + 8 * kept;
      }
    }
    return depths;
  }

  private static byte[] value(KeyValue<byte[], byte[]> kv) {
    return kv.hasValue() ? kv.getValue() : null;
  }
}
