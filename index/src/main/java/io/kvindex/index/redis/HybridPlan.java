package io.kvindex.index.redis;

import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.HybridHit;
import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A hybrid model's lookup: its full-attention group is read as any model's (prefix depths, tiers,
 * ranks), and beside it, in the same head read, the block fields of each other spec group at every
 * unit the hit rule may ask about; the two are then combined per stream (a pod's rank) by {@link
 * HybridHit}. Immutable and thread-safe.
 */
final class HybridPlan {
  private final HybridHit rule;
  private final List<Group> specGroups;
  private final int hashBlock;
  private final int fullBlock;
  private final int promptTokens;
  private final long[] fullKeys;

  /** Per spec group, where its fields start in {@link #fields}, and how many it has. */
  private final int[] fieldStart;

  private final int[] fieldCount;
  private final List<byte[]> fields;

  /**
   * @param rule the model's hit rule ({@link HybridHit#specGroups} starts with full attention)
   * @param hashBlock tokens per key of {@code keys}
   * @param promptTokens the prompt's tokens (the hit is at most one fewer)
   * @param keys the prompt's block keys, one per {@code hashBlock} tokens (read, never changed)
   * @param prefixOf the block-field prefix of a cache group
   */
  HybridPlan(
      HybridHit rule, int hashBlock, int promptTokens, long[] keys, IntFunction<byte[]> prefixOf) {
    this.rule = rule;
    this.specGroups = rule.specGroups();
    this.hashBlock = hashBlock;
    this.promptTokens = promptTokens;
    this.fullBlock = specGroups.get(0).blockSize();
    this.fullKeys = unitKeys(keys, fullBlock / hashBlock, keys.length * hashBlock / fullBlock);
    int max = Math.max(0, promptTokens - 1);
    fieldStart = new int[specGroups.size()];
    fieldCount = new int[specGroups.size()];
    fields = new ArrayList<>();
    for (int k = 1; k < specGroups.size(); k++) {
      Group g = specGroups.get(k);
      int unit = rule.unit(g);
      int units = Math.min(keys.length * hashBlock / unit, max / unit);
      byte[] prefix = prefixOf.apply(g.index());
      fieldStart[k] = fields.size();
      fieldCount[k] = units;
      for (long key : unitKeys(keys, unit / hashBlock, units)) {
        fields.add(KeySchema.blockField(prefix, key));
      }
    }
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

  /** The full-attention group, read as a single group's lookup is. */
  int fullGroup() {
    return specGroups.get(0).index();
  }

  /** The keys of the full-attention group's blocks. */
  long[] fullKeys() {
    return fullKeys;
  }

  /** The other groups' block fields, read beside the full-attention group's head read. */
  List<byte[]> fields() {
    return fields;
  }

  /**
   * The candidates' hits.
   *
   * @param full per candidate, its match in the full-attention group
   * @param layout the decoder layout those matches were made with
   * @param values the values of {@link #fields}, in order, read with them
   */
  PodMatch[] combine(PodMatch[] full, LookupDecoder.Layout layout, List<byte[]> values) {
    BitSet[][] held = new BitSet[specGroups.size()][layout.streams()];
    for (int k = 1; k < specGroups.size(); k++) {
      BitSet[] byStream = held[k];
      for (int j = 0; j < fieldCount[k]; j++) {
        int unit = j;
        layout.holders(
            values.get(fieldStart[k] + j),
            s -> (byStream[s] == null ? byStream[s] = new BitSet() : byStream[s]).set(unit));
      }
    }
    PodMatch[] out = new PodMatch[full.length];
    for (int p = 0; p < full.length; p++) {
      out[p] = match(full[p], layout.streamsOf(p), layout, held);
    }
    return out;
  }

  private PodMatch match(PodMatch m, int[] streams, LookupDecoder.Layout layout, BitSet[][] held) {
    if (m.depth() == 0) {
      return m; // full attention holds nothing: neither does the model
    }
    int best = 0;
    int[] bestGroups = null;
    Map<Integer, Integer> ranks = new HashMap<>();
    HybridHit.Holds[] holds = new HybridHit.Holds[specGroups.size()];
    for (int s : streams) {
      int rank = layout.rankOf(s);
      // A rank-less stream only carries routes this router's kind recorded: the engine is
      // computing that prompt, so each group will hold what the prompt needs.
      int depth = rank < 0 ? m.depth() : m.rankDepths().getOrDefault(rank, 0);
      holds[0] = i -> i < depth;
      for (int k = 1; k < holds.length; k++) {
        BitSet bits = held[k][s];
        holds[k] = rank < 0 ? i -> true : bits == null ? i -> false : bits::get;
      }
      HybridHit.Hit hit = rule.hit(promptTokens, holds);
      if (rank >= 0 && hit.tokens() > 0) {
        ranks.put(rank, hit.tokens() / hashBlock);
      }
      if (bestGroups == null || hit.tokens() > best) {
        best = hit.tokens();
        bestGroups = hit.groupTokens();
      }
    }
    Map<Integer, Integer> groupTokens = new HashMap<>();
    for (int k = 0; bestGroups != null && k < bestGroups.length; k++) {
      groupTokens.put(specGroups.get(k).index(), bestGroups[k]);
    }
    int depth = best / hashBlock;
    int perFull = fullBlock / hashBlock;
    return new PodMatch(
        m.pod(),
        depth,
        Math.min(depth, m.gpuDepth() * perFull),
        Math.min(depth, m.gpuCpuDepth() * perFull),
        depth == 0 ? 0.0 : m.score() / (m.depth() * perFull) * depth,
        ranks,
        m.speculative() && depth > 0,
        groupTokens);
  }
}
