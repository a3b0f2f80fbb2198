package io.kvindex.index.redis;

import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.CacheLayout.Kind;
import io.kvindex.index.HybridHit;
import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A hybrid model's lookup: its full-attention group is read as any model's (prefix depths, tiers,
 * ranks), and beside it, in the same head read, each other spec group; the two are then combined
 * per stream (a pod's rank) by {@link HybridHit}. Immutable and thread-safe.
 *
 * <p>An other group is read one of two ways, as the full-attention group's head read is:
 *
 * <ul>
 *   <li><b>by segments</b>, while the full-attention group is: its blocks are located by the
 *       full-attention chain (apply.lua, storeLocatedBy), so its span fields are named by the same
 *       heads as the prompt's full-attention ones, and a unit of the group is the full-attention
 *       position its last block ends at. Below block 256 its slots are kept in the full-attention
 *       group's own segments, with offsets of their own (a sparse group of engine keys whose index
 *       is at most {@value #MAX_MERGED_GROUP}, apply.lua's mergedInto): the head read's segment
 *       values serve both groups, and the group adds only its spans (one field per 256 blocks from
 *       block 256 on); another group reads its own segments too (one field per 16 blocks). Only
 *       where every unit of the other groups ends on a full-attention block (a Mamba group with
 *       fine-grained hits on larger full-attention blocks is read by block fields);
 *   <li><b>by block fields</b>, one per unit the hit rule may ask about, when the full-attention
 *       group is read by block fields (its keys do not start the chain, or the prompt reaches
 *       blocks of unknown position), or when one of the group's own segments or spans overflowed;
 *       where one of the full-attention segments that keep its slots overflowed, only its units
 *       ending there.
 * </ul>
 */
final class HybridPlan {
  private final HybridHit rule;
  private final List<Group> specGroups;
  private final int hashBlock;
  private final int fullBlock;
  private final int promptTokens;
  private final long[] keys;
  private final long[] fullKeys;

  /** Per spec group (index 0, full attention, unused): its field prefix, units read, unit size. */
  private final byte[][] prefixes;

  private final int[] unitCount;
  private final int[] unitTokens;

  /** The spec groups' indices, ascending; and per spec group, where its index is in that order. */
  private final int[] groupOrder;

  private final int[] rankInGroupOrder;

  /** Whether every other group's units end on full-attention blocks (a read by segments works). */
  private final boolean segmentable;

  /** Groups of at most this index keep their segments' slots in the anchor's (apply.lua). */
  static final int MAX_MERGED_GROUP = 14;

  /**
   * Per spec group (index 0 unused), the first offset of its slots in the full-attention group's
   * segments, or -1 when it keeps segments of its own.
   */
  private final int[] slotBase;

  private List<byte[]> blockFields;

  /**
   * @param rule the model's hit rule ({@link HybridHit#specGroups} starts with full attention)
   * @param hashBlock tokens per key of {@code keys}
   * @param promptTokens the prompt's tokens (the hit is at most one fewer)
   * @param keys the prompt's block keys, one per {@code hashBlock} tokens (read, never changed)
   * @param prefixOf the block-field prefix of a cache group
   * @param engineKeys whether the keys are the engine's (a sparse group's stores are then located
   *     by the full-attention group's, and kept in its segments)
   */
  HybridPlan(
      HybridHit rule,
      int hashBlock,
      int promptTokens,
      long[] keys,
      IntFunction<byte[]> prefixOf,
      boolean engineKeys) {
    this.rule = rule;
    this.specGroups = rule.specGroups();
    this.hashBlock = hashBlock;
    this.promptTokens = promptTokens;
    this.keys = keys;
    this.fullBlock = specGroups.get(0).blockSize();
    this.fullKeys = unitKeys(keys, fullBlock / hashBlock, keys.length * hashBlock / fullBlock);
    int max = Math.max(0, promptTokens - 1);
    prefixes = new byte[specGroups.size()][];
    unitCount = new int[specGroups.size()];
    unitTokens = new int[specGroups.size()];
    slotBase = new int[specGroups.size()];
    boolean aligned = true;
    for (int k = 1; k < specGroups.size(); k++) {
      Group g = specGroups.get(k);
      slotBase[k] = slotBase(g, engineKeys);
      int unit = rule.unit(g);
      prefixes[k] = prefixOf.apply(g.index());
      unitTokens[k] = unit;
      unitCount[k] = Math.min(keys.length * hashBlock / unit, max / unit);
      aligned &= unit % fullBlock == 0;
    }
    this.segmentable = aligned;
    groupOrder = new int[specGroups.size()];
    for (int k = 0; k < groupOrder.length; k++) {
      groupOrder[k] = specGroups.get(k).index();
    }
    Arrays.sort(groupOrder);
    rankInGroupOrder = new int[specGroups.size()];
    for (int k = 0; k < specGroups.size(); k++) {
      rankInGroupOrder[k] = Arrays.binarySearch(groupOrder, specGroups.get(k).index());
    }
  }

  /**
   * The first offset of a group's slots in its anchor's segments (apply.lua's slotBase), or -1 when
   * it keeps its own: a sparse group of engine keys, located by the anchor's chain, is kept there
   * when its index fits the offset byte.
   */
  static int slotBase(Group g, boolean engineKeys) {
    boolean sparse =
        g.kind() == Kind.SLIDING_WINDOW || g.kind() == Kind.CHUNKED_LOCAL || g.kind() == Kind.MAMBA;
    return engineKeys && sparse && g.index() <= MAX_MERGED_GROUP
        ? KeySchema.SEGMENT_BLOCKS * (g.index() + 1)
        : -1;
  }

  /** The first {@code units} keys of units of {@code per} keys: each unit's last key. */
  private static long[] unitKeys(long[] keys, int per, int units) {
    if (per == 1 && units == keys.length) {
      return keys;
    }
    long[] out = new long[units];
    for (int j = 0; j < units; j++) {
      out[j] = keys[(j + 1) * per - 1];
    }
    return out;
  }

  /** Whether the other groups may be read by segments (see the class notes). */
  boolean segmentable() {
    return segmentable;
  }

  /**
   * The other groups' fields, read beside the full-attention group's head read: by segments of
   * {@code prompt} (the full-attention prompt), those not kept in its segments, or one block field
   * per unit. By segments, a group kept in the full-attention group's segments reads the block
   * fields of its units in each of them read as block fields ({@code byBlocks}: it overflowed),
   * then its own span fields; another group reads its segment and span fields.
   *
   * @param byBlocks by segments, which of the prompt's segments the full-attention group reads as
   *     block fields
   */
  List<byte[]> fields(boolean bySegments, Prompt prompt, boolean[] byBlocks) {
    if (!bySegments) {
      return blockFields();
    }
    List<byte[]> fields = new ArrayList<>((specGroups.size() - 1) * prompt.segments());
    for (int k = 1; k < specGroups.size(); k++) {
      for (int j = 0; j < prompt.segments(); j++) {
        if (j >= ownFrom(k)) {
          fields.add(
              HashFields.segmentField(
                  prefixes[k], fullKeys[prompt.segmentStart(j)], j >= SHORT_SEGMENTS));
        } else if (byBlocks[j]) {
          int per = unitTokens[k] / hashBlock;
          for (int u = firstUnit(k, prompt, j); u < unitEnd(k, prompt, j); u++) {
            fields.add(HashFields.blockField(prefixes[k], keys[(u + 1) * per - 1]));
          }
        }
      }
    }
    return fields;
  }

  /** The first unit of spec group {@code k} that ends in the prompt's segment {@code j}. */
  private int firstUnit(int k, Prompt prompt, int j) {
    int per = fullPer(k);
    return (prompt.segmentStart(j) + per) / per - 1; // (u + 1) per - 1 at or past the start
  }

  /** The unit of spec group {@code k} past the last that ends in the prompt's segment {@code j}. */
  private int unitEnd(int k, Prompt prompt, int j) {
    return Math.min(unitCount[k], prompt.segmentEnd(j) / fullPer(k));
  }

  /** Full-attention blocks per unit of spec group {@code k} (by segments). */
  private int fullPer(int k) {
    return Math.max(1, unitTokens[k] / fullBlock);
  }

  private static final int SHORT_SEGMENTS = KeySchema.SPAN_FROM / KeySchema.SEGMENT_BLOCKS;

  /** The first of the prompt's segments spec group {@code k} reads a field of its own for. */
  private int ownFrom(int k) {
    return slotBase[k] >= 0 ? SHORT_SEGMENTS : 0;
  }

  private synchronized List<byte[]> blockFields() {
    if (blockFields == null) {
      List<byte[]> fields = new ArrayList<>();
      for (int k = 1; k < specGroups.size(); k++) {
        int unit = unitTokens[k];
        for (long key : unitKeys(keys, unit / hashBlock, unitCount[k])) {
          fields.add(HashFields.blockField(prefixes[k], key));
        }
      }
      blockFields = fields;
    }
    return blockFields;
  }

  /** Whether a read by segments found one of them overflowed (its blocks must be read instead). */
  static boolean overflowed(List<byte[]> values) {
    for (byte[] v : values) {
      if (SegmentCodec.isOverflowed(v)) {
        return true;
      }
    }
    return false;
  }

  /** The full-attention group, read as a single group's lookup is. */
  int fullGroup() {
    return specGroups.get(0).index();
  }

  /** The keys of the full-attention group's blocks. */
  long[] fullKeys() {
    return fullKeys;
  }

  /**
   * The candidates' hits.
   *
   * @param full per candidate, its match in the full-attention group
   * @param layout the decoder layout those matches were made with
   * @param values the values of {@link #fields}, in order, read with them
   * @param fullSegments by segments, the values of the prompt's full-attention segment fields read
   *     with them (null for those read as block fields); else unused
   * @param byBlocks by segments, which of the prompt's segments the full-attention group read as
   *     block fields, as given to {@link #fields}; else unused
   * @param bySegments whether {@link #fields} were read by segments of {@code prompt}
   */
  PodMatch[] combine(
      PodMatch[] full,
      StreamLayout layout,
      List<byte[]> values,
      byte[][] fullSegments,
      boolean[] byBlocks,
      boolean bySegments,
      Prompt prompt) {
    // Per spec group, which of its units each stream holds, decoded field by field as the hit
    // rule first asks about a unit the field holds: a candidate only needs the units ending near
    // its full-attention prefix, and one holding nothing needs none.
    HeldUnits[] holds = new HeldUnits[specGroups.size()];
    int at = 0;
    for (int k = 1; k < specGroups.size(); k++) {
      GroupHolds group;
      if (!bySegments || ownFrom(k) == 0) {
        int own = bySegments ? prompt.segments() : unitCount[k];
        group = new GroupHolds(k, layout, values.subList(at, at + own), bySegments, prompt);
        at += own;
      } else {
        // Its short segments' slots are in the full-attention group's (its units' block fields
        // where that group read block fields); its spans are its own.
        List<byte[]> read = new ArrayList<>(prompt.segments());
        byte[][] unitValues = null;
        for (int j = 0; j < prompt.segments(); j++) {
          if (j >= ownFrom(k)) {
            read.add(values.get(at++));
          } else if (!byBlocks[j]) {
            read.add(fullSegments[j]);
          } else {
            read.add(null);
            unitValues = unitValues != null ? unitValues : new byte[unitCount[k]][];
            for (int u = firstUnit(k, prompt, j); u < unitEnd(k, prompt, j); u++) {
              unitValues[u] = values.get(at++);
            }
          }
        }
        group = new GroupHolds(k, layout, read, true, prompt);
        group.byBlocks(unitValues == null ? null : byBlocks, unitValues);
      }
      holds[k] = new HeldUnits(group);
    }
    int[] found = new int[specGroups.size()];
    int[] bestGroups = new int[specGroups.size()];
    PodMatch[] out = new PodMatch[full.length];
    for (int p = 0; p < full.length; p++) {
      out[p] = match(full[p], layout.streamsOf(p), layout, holds, found, bestGroups);
    }
    return out;
  }

  /** The segment (or span) of a prompt that its block {@code block} lies in. */
  static int segmentOf(int block) {
    return block < KeySchema.SPAN_FROM
        ? block / KeySchema.SEGMENT_BLOCKS
        : SHORT_SEGMENTS + (block - KeySchema.SPAN_FROM) / KeySchema.SPAN_BLOCKS;
  }

  /**
   * Which units of one other spec group each stream holds, as bits in one array (stream {@code s}'s
   * at words {@code [s * words, (s + 1) * words)}), filled one read field at a time, the first time
   * a unit the field holds is asked about. A field is decoded once, for every stream: by segments,
   * a segment's slots are walked and each unit ending in it is placed; by block fields, the unit's
   * own field. Not thread-safe (one lookup's).
   */
  private final class GroupHolds {
    private final int k;
    private final StreamLayout layout;
    private final List<byte[]> values;
    private final boolean bySegments;
    private final Prompt prompt;
    private final int units;
    private final int words;

    /** Full-attention blocks per unit of the group (by segments). */
    private final int per;

    /** The first offset of the group's slots in the short segments read (0: its own). */
    private final int base;

    private final long[] bits;

    /** Per field of {@code values}, whether it was decoded. */
    private final boolean[] decoded;

    /**
     * By segments, which short segments are read as their units' block fields (null: none), and
     * those values, per unit.
     */
    private boolean[] byBlocks;

    private byte[][] unitValues;

    GroupHolds(int k, StreamLayout layout, List<byte[]> values, boolean bySegments, Prompt prompt) {
      this.k = k;
      this.layout = layout;
      this.values = values;
      this.bySegments = bySegments;
      this.prompt = prompt;
      this.units = unitCount[k];
      this.words = (units + 63) >>> 6;
      this.per = fullPer(k);
      this.base = Math.max(0, slotBase[k]);
      this.bits = new long[layout.streams() * words];
      this.decoded = new boolean[values.size()];
    }

    /** Reads the short segments {@code byBlocks} names by their units' block values. */
    void byBlocks(boolean[] byBlocks, byte[][] unitValues) {
      this.byBlocks = byBlocks;
      this.unitValues = unitValues;
    }

    /** The field unit {@code i} is read in. */
    private int fieldOf(int i) {
      return bySegments ? segmentOf((i + 1) * per - 1) : i;
    }

    /** Decodes the fields units {@code [from, to]} are read in, those not decoded yet. */
    private void decodeUnits(int from, int to) {
      int last = Math.min(fieldOf(to), decoded.length - 1); // past the fields: never read
      for (int f = fieldOf(from); f <= last; f++) {
        if (!decoded[f]) {
          decoded[f] = true;
          decode(f);
        }
      }
    }

    /** Whether stream {@code s} holds unit {@code i}. */
    boolean held(int s, int i) {
      if (i < 0 || i >= units) {
        return false;
      }
      decodeUnits(i, i);
      return (bits[s * words + (i >>> 6)] & (1L << i)) != 0;
    }

    /** {@link HybridHit.Holds#runDown} for stream {@code s}: its held units from {@code i} down. */
    int runDown(int s, int i, int atMost) {
      if (i < 0 || i >= units || atMost <= 0) {
        return 0;
      }
      decodeUnits(Math.max(0, i - atMost + 1), i);
      int base = s * words;
      int n = 0;
      int at = i;
      while (n < atMost && at >= 0) {
        // The held units from `at` down within its word: leading ones once `at` is the top bit.
        int ones = Long.numberOfLeadingZeros(~(bits[base + (at >>> 6)] << (63 - (at & 63))));
        int inWord = (at & 63) + 1;
        n += Math.min(ones, inWord);
        if (ones < inWord) {
          break;
        }
        at -= inWord;
      }
      return Math.min(n, atMost);
    }

    private void decode(int f) {
      if (!bySegments) {
        byte[] value = values.get(f);
        if (value != null) {
          set(value, BlockValue.entriesFrom(value), value.length, f, f);
        }
        return;
      }
      if (byBlocks != null && f < ownFrom(k) && byBlocks[f]) {
        for (int u = firstUnit(k, prompt, f); u < unitEnd(k, prompt, f); u++) {
          byte[] value = unitValues[u];
          if (value != null) {
            set(value, BlockValue.entriesFrom(value), value.length, u, u);
          }
        }
        return;
      }
      // Unit i is the block at the full-attention position its last token lies in: the segment's
      // slots are read in place, for the units' blocks only. Consecutive units whose entries are
      // the same bytes (a prefix many pods hold, a span's repeated slots) are set as one run: each
      // holder's units at once, not unit by unit.
      SegmentCodec.Slots slots =
          new SegmentCodec.Slots(
              values.get(f),
              fullKeys,
              prompt.segmentStart(f),
              prompt.segmentEnd(f),
              f < SHORT_SEGMENTS ? base : 0);
      byte[] run = null;
      int runFrom = 0;
      int runTo = 0;
      int first = 0;
      int last = 0;
      while (slots.next()) {
        int end = slots.block() + 1; // blocks up to here: a unit ends here if a multiple of per
        if (end % per != 0 || end / per > units) {
          continue;
        }
        int unit = end / per - 1;
        byte[] value = slots.value();
        int from = slots.from();
        int to = slots.to();
        if (run != null
            && unit == last + 1
            && ((value == run && from == runFrom && to == runTo) // a span's repeated slot
                || BlockValues.equal(value, from, to, run, runFrom, runTo))) {
          last = unit;
          continue;
        }
        if (run != null) {
          set(run, runFrom, runTo, first, last);
        }
        run = value;
        runFrom = from;
        runTo = to;
        first = unit;
        last = unit;
      }
      if (run != null) {
        set(run, runFrom, runTo, first, last);
      }
    }

    /**
     * Marks units {@code [first, last]} held by each stream that entries {@code [from, to)} list.
     */
    private void set(byte[] value, int from, int to, int first, int last) {
      int[] streamOfSlot = layout.streamOfSlot;
      int firstWord = first >>> 6;
      int lastWord = last >>> 6;
      long firstMask = -1L << (first & 63);
      long lastMask = -1L >>> (63 - (last & 63));
      for (int e = from; e + 1 < to; e += BlockValue.ENTRY_BYTES) {
        int slot = BlockValue.slotAt(value, e);
        int s = slot < streamOfSlot.length ? streamOfSlot[slot] - 1 : -1;
        if (s < 0 || BlockValue.tiersAt(value, e) == 0) {
          continue;
        }
        int base = s * words;
        if (firstWord == lastWord) {
          bits[base + firstWord] |= firstMask & lastMask;
        } else {
          bits[base + firstWord] |= firstMask;
          for (int w = firstWord + 1; w < lastWord; w++) {
            bits[base + w] = -1L;
          }
          bits[base + lastWord] |= lastMask;
        }
      }
    }
  }

  /**
   * One spec group's holds for the stream the hit rule is asked about: the units {@code group}
   * holds for it, or every unit. Set per stream; one class for every group, so the hit rule's calls
   * stay direct.
   */
  private static final class HeldUnits implements HybridHit.Holds {
    private final GroupHolds group;
    private int stream;
    private boolean all;

    HeldUnits(GroupHolds group) {
      this.group = group;
    }

    void set(int stream, boolean all) {
      this.stream = stream;
      this.all = all;
    }

    @Override
    public boolean unit(int i) {
      return all || group.held(stream, i);
    }

    @Override
    public int runDown(int i, int atMost) {
      return all ? Math.max(0, Math.min(atMost, i + 1)) : group.runDown(stream, i, atMost);
    }
  }

  /**
   * One candidate's hit: its best stream's, from each stream's units held ({@code holds[k]}, per
   * other spec group), with {@code found} and {@code bestGroups} as scratch.
   */
  private PodMatch match(
      PodMatch m,
      int[] streams,
      StreamLayout layout,
      HeldUnits[] holds,
      int[] found,
      int[] bestGroups) {
    if (m.depth() == 0) {
      return m; // full attention holds nothing: neither does the model
    }
    int best = -1;
    int firstRank = -1;
    int firstRankDepth = 0;
    int firstRankFull = 0; // the first rank's full-attention depth
    Map<Integer, Integer> ranks = null; // only past one rank with a hit
    for (int s : streams) {
      int rank = layout.rankOf(s);
      int depth = rank < 0 ? m.depth() : m.rankDepths().getOrDefault(rank, 0);
      for (int k = 1; k < holds.length; k++) {
        // A rank-less stream only carries routes this router's kind recorded: the engine is
        // computing that prompt, so each group will hold what the prompt needs.
        holds[k].set(s, rank < 0);
      }
      int tokens = rule.hitWithPrefix(promptTokens, depth, holds, found);
      if (rank >= 0 && tokens > 0) {
        if (firstRank < 0) {
          firstRank = rank;
          firstRankDepth = tokens / hashBlock;
          firstRankFull = depth;
        } else {
          if (ranks == null) {
            ranks = new HashMap<>();
            ranks.put(firstRank, firstRankDepth);
          }
          ranks.put(rank, tokens / hashBlock);
        }
      }
      if (tokens > best) {
        best = tokens;
        System.arraycopy(found, 0, bestGroups, 0, found.length);
      }
    }
    int perFull = fullBlock / hashBlock;
    Map<Integer, Integer> rankDepths;
    if (ranks != null) {
      rankDepths = ranks;
    } else if (firstRank < 0) {
      rankDepths = Map.of();
    } else if (perFull == 1 && firstRankDepth == firstRankFull && m.rankDepths().size() == 1) {
      rankDepths = m.rankDepths(); // the one rank's full-attention depth stands: the same map
    } else {
      rankDepths = Map.of(firstRank, firstRankDepth);
    }
    Map<Integer, Integer> groupTokens = Map.of();
    if (best >= 0) {
      int[] tokens = new int[bestGroups.length];
      for (int k = 0; k < bestGroups.length; k++) {
        tokens[rankInGroupOrder[k]] = bestGroups[k];
      }
      groupTokens = PodMatch.groupTokens(groupOrder, tokens);
    }
    best = Math.max(best, 0);
    int depth = best / hashBlock;
    return new PodMatch(
        m.pod(),
        depth,
        Math.min(depth, m.gpuDepth() * perFull),
        Math.min(depth, m.gpuCpuDepth() * perFull),
        depth == 0 ? 0.0 : m.score() / (m.depth() * perFull) * depth,
        rankDepths,
        m.speculative() && depth > 0,
        groupTokens);
  }
}
