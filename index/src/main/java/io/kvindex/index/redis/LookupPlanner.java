package io.kvindex.index.redis;

import io.kvindex.index.PodMatch;
import io.kvindex.index.redis.CandidateGroup.PodKeys;
import io.kvindex.index.redis.CandidateGroup.ResolvedRecords;
import io.micrometer.core.instrument.Counter;
import java.util.ArrayList;
import java.util.List;

/**
 * One group's part of one lookup as decisions, without I/O: from what the router knows of the group
 * ({@link GroupState}) and the prompt, which read comes next and what it asks for; from a read's
 * reply, the answer or what the next read must be instead. {@link GroupLookup} makes the reads. Not
 * thread-safe: a lookup's turns run one after another.
 *
 * <p>The reads:
 *
 * <ul>
 *   <li><b>verify</b>: identity.lua, before the first read after a pause in the group's answered
 *       reads ({@link GroupState#VERIFY_AFTER_NANOS}), a failed read or a reconnect: is the node
 *       serving the group the one its data was written on?
 *   <li><b>script</b>: lookup.lua, when the slots generation moved between two reads of one lookup
 *       (it reads everything in one call);
 *   <li><b>head</b>: one HMGET of the slots generation, the unlocated heads, the epoch, the records
 *       of the candidates whose cached record is not usable, and the prompt: its first block's
 *       field and its segment and span fields (an overflowed one's block fields in its place) while
 *       none of its segment fields is an unlocated head (a block under which the group holds blocks
 *       of unknown position) and the keys start at the chain's block 0, else its first {@value
 *       #FIRST_CHUNK} block fields; beside it, one HMGET of the group's speculative routes by the
 *       prompt's segment and span fields up to {@link RedisSpeculation#BLOCKS_PER_ROUTE} blocks;
 *       for a hybrid model, the other cache groups' fields in the same HMGET ({@link HybridPlan});
 *   <li><b>chunk</b>: the prompt's next block fields (4 times the last read, at most {@value
 *       #MAX_CHUNK}) with the slots generation, while some candidate still matches.
 * </ul>
 *
 * A head read's reply sends the next turn elsewhere when it demands it ({@link Again}): the epoch
 * changed (a reset: head, every record read afresh), the generation moved since the records were
 * cached (the same), the keys do not start at the chain's block 0 (head by block fields), an
 * unlocated head of the prompt appeared or a segment or span overflowed since (head by the new
 * plan); a chunk's reply, when the generation moved (script).
 */
final class LookupPlanner {
  /** Block fields of a first read by block fields: one round trip up to 4 096 tokens. */
  static final int FIRST_CHUNK = 256;

  static final int MAX_CHUNK = 4096;

  /** Fields every head read starts with: the slots generation, the unlocated heads, the epoch. */
  static final int READ_HEADER = 3;

  /** Turns after which a lookup reads everything with one script call (never reached in use). */
  static final int MAX_TURNS = 32;

  /** The read a turn makes. */
  enum Read {
    VERIFY,
    HEAD,
    CHUNK,
    SCRIPT
  }

  /** Why a reply was not the answer: what the next turn reads instead. */
  enum Again {
    /** The node serving the group was verified: the lookup's reads go ahead. */
    VERIFIED,
    /** The epoch changed: the group was reset; every record is read afresh. */
    RESET,
    /** The slots generation moved since the records were cached: every record is read afresh. */
    STALE_RECORDS,
    /** The keys do not start at the chain's block 0: the prompt is read by block fields. */
    NOT_CHAIN_START,
    /**
     * An unlocated head of the prompt appeared, or a segment overflowed: the next head reads
     * around.
     */
    REPLANNED,
    /** A hybrid model's other group overflowed a segment: their block fields are read. */
    HYBRID_OVERFLOW,
    /** More of the prompt is to be read. */
    MORE,
    /** The generation moved between two reads: the next turn runs lookup.lua. */
    GENERATION_MOVED
  }

  /** The lookup's counters. */
  record Counters(
      Counter recordsRead, Counter rereads, Counter blockReads, Counter overflowReads) {}

  /** A head read: its fields of the blocks hash, and those of the speculative routes. */
  record HeadRead(byte[][] fields, byte[][] routeFields) {}

  private final GroupState state;
  private final CandidateGroup group;
  private final List<PodKeys> candidates;
  private final Prompt prompt;
  private final HybridPlan hybrid;
  private final double[] weights;
  private final Counters counters;

  /** The next head read reads every candidate's record (the generation moved since cached). */
  private boolean allFresh;

  /** The next turn runs lookup.lua. */
  private boolean script;

  /** The node serving the group was verified in this lookup. */
  private boolean verified;

  private int turns;
  private LookupDecoder decoder;
  private StreamLayout layout;

  /** Per candidate, the blocks its speculative routes give it, as the last head read found. */
  private int[] speculative;

  private long generation;
  private int decodedBlocks;

  // What the pending head read asked: which candidates' records, which prompt fields, whether by
  // segments, the cached records it was planned with, and how many fields were the other groups'.
  private List<Integer> fresh;
  private List<byte[]> payload;
  private boolean bySegment;
  private PodRecords known;
  private int hybridFields;
  private boolean hybridBySegments;

  /** One of the other groups' segments overflowed: this lookup reads their block fields. */
  private boolean hybridByBlockFields;

  /** The values of {@link HybridPlan#fields} the last head read found. */
  private List<byte[]> hybridValues;

  /**
   * By segments, which of the prompt's segments the pending head read reads as block fields (they
   * overflowed), and the values of the others' fields the last head read found.
   */
  private boolean[] segmentsByBlocks;

  private byte[][] fullSegments;

  /** The pending chunk's blocks. */
  private int chunkTo;

  /**
   * @param hybrid a hybrid model's other groups, read beside the full-attention group's head read
   *     and combined with its answer; null for a model of one group
   */
  LookupPlanner(
      GroupState state,
      CandidateGroup group,
      Prompt prompt,
      HybridPlan hybrid,
      double[] weights,
      Counters counters) {
    this.state = state;
    this.group = group;
    this.candidates = group.keys;
    this.prompt = prompt;
    this.hybrid = hybrid;
    this.weights = weights;
    this.counters = counters;
  }

  /**
   * The next turn's read.
   *
   * @param verifyDue whether the group's reads paused, failed or reconnected since last answered
   */
  Read next(boolean verifyDue) {
    if (!verified && verifyDue) {
      return Read.VERIFY;
    }
    if (script && hybrid != null && turns < MAX_TURNS) {
      // The other groups' fields were read with the head: read everything again, together.
      script = false;
      decoder = null;
      allFresh = true;
      counters.rereads().increment();
    }
    if (script || ++turns > MAX_TURNS) {
      return Read.SCRIPT;
    }
    return decoder != null ? Read.CHUNK : Read.HEAD;
  }

  /** Whether the verify read found the node the group's data was written on (null: no answer). */
  boolean verified(Boolean same) {
    verified = Boolean.TRUE.equals(same);
    return verified;
  }

  /**
   * The head read's fields. A candidate's cached record serves while the group's slots generation
   * is unchanged and the record's deadline ({@code nowMs}, Redis clock; only ever moved later,
   * except by changes that move the generation) has not passed; the others are read with the
   * blocks.
   */
  HeadRead head(long nowMs) {
    known = allFresh ? null : state.records();
    // The records the last lookup resolved, while they stand, need no check pod by pod.
    ResolvedRecords resolved = group.resolved;
    fresh = new ArrayList<>();
    if (resolved == null || !resolved.covers(known, nowMs)) {
      for (int i = 0; i < candidates.size(); i++) {
        if (known == null || !known.usable(candidates.get(i).name(), nowMs)) {
          fresh.add(i);
        }
      }
    }
    if (!fresh.isEmpty()) {
      counters.recordsRead().increment(fresh.size());
    }
    bySegment = !prompt.byBlockFields() && !state.unlocatedHeads().touches(prompt);
    payload =
        bySegment
            ? segmentPlan()
            : prompt.blockFields().subList(0, Math.min(prompt.length(), FIRST_CHUNK));
    if (!bySegment) {
      counters.blockReads().increment();
    } else if (payload.size() > 1 + prompt.segments()) {
      counters.overflowReads().increment();
    }
    hybridBySegments = hybrid != null && bySegment && hybrid.segmentable() && !hybridByBlockFields;
    List<byte[]> extra =
        hybrid == null ? List.of() : hybrid.fields(hybridBySegments, prompt, segmentsByBlocks);
    hybridFields = extra.size();
    byte[][] fields = new byte[READ_HEADER + fresh.size() + payload.size() + extra.size()][];
    fields[0] = KeySchema.SLOTS_GENERATION_FIELD;
    fields[1] = KeySchema.UNLOCATED_HEADS_FIELD;
    fields[2] = KeySchema.EPOCH_FIELD;
    int at = READ_HEADER;
    for (int i : fresh) {
      fields[at++] = candidates.get(i).holder();
    }
    for (byte[] field : payload) {
      fields[at++] = field;
    }
    for (byte[] field : extra) {
      fields[at++] = field;
    }
    return new HeadRead(fields, SpeculativeRoutes.fields(prompt));
  }

  /**
   * What the head read's reply says: the answer (a step that is done), or why the next turn reads
   * again.
   *
   * @param values the values of {@link HeadRead#fields}, in order (null for absent)
   * @param routes the values of {@link HeadRead#routeFields}, in order, or null when none was asked
   * @param nowMs the Redis clock's estimate when the read was made
   */
  Step headReply(List<byte[]> values, List<byte[]> routes, long nowMs) {
    speculative = routes == null ? null : SpeculativeRoutes.depths(routes, prompt, group, nowMs);
    long gen = Bytes.decimal(values.get(0));
    boolean same = known != null && known.generation() == gen;
    PodRecords learned = !same ? new PodRecords(gen) : fresh.isEmpty() ? known : known.copy();
    for (int i = 0; i < fresh.size(); i++) {
      learned.put(candidates.get(fresh.get(i)).name(), values.get(READ_HEADER + i));
    }
    ResolvedRecords resolved = null;
    if (same || fresh.size() == candidates.size()) {
      resolved = group.resolved;
      if (resolved == null || !resolved.covers(learned, nowMs)) {
        resolved = group.resolve(learned, nowMs);
      }
    }
    if (state.identityIs(values.get(2))) {
      // Redis lost the group or failed over since the last read: nothing cached stands.
      allFresh = true;
      return Step.again(Again.RESET);
    }
    if (resolved == null) {
      // Some pod's slots changed since the cached records were read: read every record afresh.
      counters.rereads().increment();
      state.replaceRecords(new PodRecords(gen));
      allFresh = true;
      return Step.again(Again.STALE_RECORDS);
    }
    allFresh = false;
    if (learned != known) {
      state.learnRecords(learned);
    }
    int first = READ_HEADER + fresh.size();
    int last = values.size() - hybridFields;
    List<byte[]> replied = values.subList(first, last);
    if (hybrid != null) {
      hybridValues = values.subList(last, values.size());
    }
    if (bySegment && !startsChain(replied.get(0))) {
      prompt.readByBlockFields(); // the keys do not start at the chain's block 0
      return Step.again(Again.NOT_CHAIN_START);
    }
    BlockValues blocks;
    boolean unlocated = state.unlocatedHeads(values.get(1)).touches(prompt);
    if (bySegment) {
      blocks = unlocated ? null : blockValues(payload, replied);
      if (blocks == null) {
        // Unlocated blocks past the prompt's heads, or a segment that overflowed since: the next
        // plan reads around them.
        return Step.again(Again.REPLANNED);
      }
    } else {
      blocks = new BlockValues(replied.size());
      replied.forEach(blocks::addField);
    }
    if (hybridBySegments && HybridPlan.overflowed(hybridValues)) {
      hybridByBlockFields = true; // the next head read takes the other groups' block fields
      return Step.again(Again.HYBRID_OVERFLOW);
    }
    layout = resolved.layout();
    decoder = new LookupDecoder(group.none(), layout, weights);
    decoder.speculate(speculative);
    decoder.addValues(blocks);
    generation = gen;
    decodedBlocks = blocks.size();
    return finished() ? Step.answer(answer(decoder.matches())) : Step.again(Again.MORE);
  }

  /**
   * The chunk read's fields: the slots generation, then the prompt's next block fields; if the
   * generation moved since the head read (a purge, a restart, a first store), the next turn reads
   * everything with one script call rather than mix two states of the index.
   */
  byte[][] chunk() {
    int from = decodedBlocks;
    chunkTo = Math.min(prompt.length(), from + Math.min(from * 4, MAX_CHUNK));
    List<byte[]> blockFields = prompt.blockFields();
    byte[][] fields = new byte[1 + chunkTo - from][];
    fields[0] = KeySchema.SLOTS_GENERATION_FIELD;
    for (int i = from; i < chunkTo; i++) {
      fields[1 + i - from] = blockFields.get(i);
    }
    return fields;
  }

  /** What the chunk read's reply says ({@code values}: those of {@link #chunk}'s fields). */
  Step chunkReply(List<byte[]> values) {
    if (Bytes.decimal(values.get(0)) != generation) {
      script = true;
      return Step.again(Again.GENERATION_MOVED);
    }
    BlockValues blocks = new BlockValues(chunkTo - decodedBlocks);
    for (int i = 1; i < values.size(); i++) {
      blocks.addField(values.get(i));
    }
    decoder.addValues(blocks);
    decodedBlocks = chunkTo;
    return finished() ? Step.answer(answer(decoder.matches())) : Step.again(Again.MORE);
  }

  /** The block fields lookup.lua reads, and the speculative depths the head read found. */
  List<byte[]> scriptFields() {
    return prompt.blockFields();
  }

  int[] speculative() {
    return speculative;
  }

  /** The script's matches (null: Redis stayed unavailable) as the lookup's answer. */
  Step scriptReply(PodMatch[] matches) {
    return Step.answer(matches == null || layout == null ? matches : answer(matches));
  }

  /** The matches of the read groups: the full-attention group's, combined with the others'. */
  private PodMatch[] answer(PodMatch[] matches) {
    return hybrid == null
        ? matches
        : hybrid.combine(
            matches,
            layout,
            hybridValues,
            fullSegments,
            segmentsByBlocks,
            hybridBySegments,
            prompt);
  }

  private boolean finished() {
    return !decoder.open() || decodedBlocks >= prompt.length();
  }

  /**
   * The fields a segment read asks for: the first block's field (its locator shows whether the keys
   * start at a segment head), then each segment's field, or its block fields if overflowed.
   */
  private List<byte[]> segmentPlan() {
    List<byte[]> plan = new ArrayList<>(1 + prompt.segments());
    plan.add(prompt.firstBlockField());
    segmentsByBlocks = new boolean[prompt.segments()];
    for (int k = 0; k < prompt.segments(); k++) {
      byte[] segment = prompt.segmentField(k);
      if (state.overflowed(segment)) {
        segmentsByBlocks[k] = true;
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
    fullSegments = new byte[prompt.segments()][];
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
      if (SegmentCodec.isOverflowed(segment)) {
        state.markOverflowed(prompt.segmentField(k));
        return null;
      }
      SegmentCodec.read(values, values.extend(end - start), segment, prompt.keys(), start, end);
      fullSegments[k] = segment;
    }
    return values;
  }

  /**
   * Whether a first block's value allows a segment read: absent (no one holds it), or located at
   * the chain's position 0. A value of odd length starts with its locator: head key, position; one
   * of even length is unlocated, stored under a parent, so the keys start past the chain's block 0.
   */
  static boolean startsChain(byte[] first) {
    if (first == null) {
      return true;
    }
    return BlockValue.isLocated(first) && BlockValue.position(first) == 0;
  }

  /** A turn's result: the answer (null when Redis stayed unavailable), or why it reads again. */
  record Step(boolean done, PodMatch[] matches, Again again) {
    static Step answer(PodMatch[] matches) {
      return new Step(true, matches, null);
    }

    static Step again(Again why) {
      return new Step(false, null, why);
    }
  }
}
