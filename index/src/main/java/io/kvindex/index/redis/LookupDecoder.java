package io.kvindex.index.redis;

import io.kvindex.index.IndexConfig;
import io.kvindex.index.PodMatch;
import io.kvindex.index.Tier;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns one group's lookup reads into per-pod matches: the candidates' pod records (which slots
 * each holds, for which rank), then block values in prompt order, one run of equal values at a
 * time. A block a pod holds speculatively ({@link #speculate}) counts as held on the GPU by each of
 * its streams, or by one rank-less stream when its live record lists none. Depth counting stops at
 * the first block no live candidate holds. Not thread-safe: one instance per lookup of one group.
 */
final class LookupDecoder {
  private static final int GPU = Tier.GPU.bit();
  private static final int GPU_CPU = Tier.GPU.bit() | Tier.CPU.bit();
  private static final int TIER_BITS = 0x0f;

  /** In a stream's {@link #kind}, beside its tier bits: the engine's own entries hold the run. */
  private static final int CONFIRMED = 0x10;

  private static final int NO_RANK = StreamLayout.NO_RANK;
  private static final byte[] NO_MARK = new byte[0];

  /** Per candidate, in order, its {@link PodMatch#none}: the match of one holding nothing. */
  private final PodMatch[] none;

  /** Per stream: its rank ({@link #NO_RANK} for a candidate's speculative-only stream). */
  private final int[] streamRank;

  private final int[][] streamsOfPod;

  /**
   * Stream index + 1 by slot, up to the highest slot a candidate holds; 0 for slots no live
   * candidate holds.
   */
  private final int[] streamOfSlot;

  private final int[] confirmed;
  private final int[] gpu;
  private final int[] gpuCpu;
  private final double[] score;
  private final double[] weight;

  /**
   * Per stream: the run that last listed it (bits 4 and up) and the engine tiers it listed (bits 0
   * to 3), in one int so that an entry costs one store.
   */
  private final int[] runTiers;

  private final int[] markStamp;
  private int run;

  /** Per candidate, the blocks it holds speculatively from block 0 (null: none does). */
  private int[] specDepth;

  /** The candidates with speculative blocks, deepest first. */
  private int[] specOrder;

  /**
   * The mark of the {@code n} deepest of {@link #specOrder}, at {@code n - 1}, made on first use.
   */
  private byte[][] specMarks;

  /**
   * Per stream: how it holds the blocks of its current stretch (tier bits, {@link #CONFIRMED}), 0
   * before its first; and the block the stretch began at. A stretch is credited (score, the depths)
   * when it ends: when the kind changes, the stream stops, or the matches are read.
   */
  private final int[] kind;

  private final int[] since;

  /** Per stream: its depth once it stopped (an active stream's is the block count). */
  private final int[] any;

  /** Streams whose depth still equals the block count: only they can grow. */
  private final int[] active;

  private int activeCount;
  private int block;

  /**
   * @param none per candidate, in the order of the records the layout was made from, its {@link
   *     PodMatch#none} (read, never changed)
   * @param weights what {@link #weights} gives for the index's settings (read, never changed)
   */
  LookupDecoder(PodMatch[] none, StreamLayout layout, double[] weights) {
    this.none = none;
    this.streamRank = layout.streamRank;
    this.streamsOfPod = layout.streamsOfPod;
    this.streamOfSlot = layout.streamOfSlot;
    int streams = layout.streams();
    any = new int[streams];
    kind = new int[streams];
    since = new int[streams];
    confirmed = new int[streams];
    gpu = new int[streams];
    gpuCpu = new int[streams];
    score = new double[streams];
    runTiers = new int[streams];
    markStamp = new int[streams];
    active = new int[streams];
    for (int s = 0; s < streams; s++) {
      active[s] = s;
    }
    activeCount = streams;
    this.weight = weights;
  }

  /** Per tier bit mask (16), the weight of its best tier: what a decoder scores with. */
  static double[] weights(IndexConfig config) {
    double[] weights = new double[16];
    for (int mask = 0; mask < weights.length; mask++) {
      weights[mask] = config.bestWeight(mask);
    }
    return weights;
  }

  /**
   * Decodes lookup.lua's reply: pod records, then (value, run) pairs; {@code speculative} per
   * candidate, the blocks it holds speculatively (null for none).
   */
  static PodMatch[] decodeScriptReply(
      PodMatch[] none, List<Object> reply, int[] speculative, double[] weights) {
    List<byte[]> records = new ArrayList<>(none.length);
    for (Object rec : (List<?>) reply.get(0)) {
      records.add(rec instanceof byte[] bytes ? bytes : null);
    }
    LookupDecoder decoder = new LookupDecoder(none, StreamLayout.of(records, true), weights);
    decoder.speculate(speculative);
    boolean open = true;
    for (int i = 1; open && i + 1 < reply.size(); i += 2) {
      byte[] value = (byte[]) reply.get(i);
      open = decoder.addRun(value, 0, value.length, (Long) reply.get(i + 1));
    }
    // The script stops at the first block no engine entry holds: speculative blocks may go on.
    if (open && decoder.specOrder != null) {
      int beyond = decoder.specDepth[decoder.specOrder[0]] - decoder.block;
      if (beyond > 0) {
        decoder.addRun(null, 0, 0, beyond);
      }
    }
    return decoder.matches();
  }

  /**
   * The blocks each candidate holds speculatively from block 0 ({@code depths}, per candidate in
   * order; null for none), before any block is added: marks for the runs that cover them.
   */
  void speculate(int[] depths) {
    if (depths == null) {
      return;
    }
    int n = 0;
    for (int d : depths) {
      n += d > 0 ? 1 : 0;
    }
    if (n == 0) {
      return;
    }
    Integer[] order = new Integer[n];
    for (int c = 0, k = 0; c < depths.length; c++) {
      if (depths[c] > 0) {
        order[k++] = c;
      }
    }
    java.util.Arrays.sort(order, (a, b) -> Integer.compare(depths[b], depths[a]));
    specDepth = depths;
    specOrder = new int[n];
    for (int k = 0; k < n; k++) {
      specOrder[k] = order[k];
    }
    specMarks = new byte[n][];
  }

  /** The mark naming the {@code n} deepest candidates with speculative blocks. */
  private byte[] specMark(int n) {
    byte[] mark = specMarks[n - 1];
    if (mark == null) {
      mark = new byte[2 * n];
      for (int k = 0; k < n; k++) {
        int c = specOrder[k] + 1;
        mark[2 * k] = (byte) (c >>> 8);
        mark[2 * k + 1] = (byte) c;
      }
      specMarks[n - 1] = mark;
    }
    return mark;
  }

  /**
   * Adds the next {@code length} blocks, whose entries are {@code value[from, to)}, split where a
   * candidate's speculative blocks end, each piece marked with the candidates that hold it
   * speculatively.
   */
  private boolean addRun(byte[] value, int from, int to, long length) {
    if (specOrder == null || block >= specDepth[specOrder[0]]) {
      return add(value, from, to, NO_MARK, length);
    }
    long left = length;
    while (left > 0) {
      int n = 0;
      while (n < specOrder.length && specDepth[specOrder[n]] > block) {
        n++;
      }
      long step = left;
      byte[] mark = NO_MARK;
      if (n > 0) {
        step = Math.min(left, specDepth[specOrder[n - 1]] - block);
        mark = specMark(n);
      }
      if (!add(value, from, to, mark, step)) {
        return false;
      }
      left -= step;
    }
    return true;
  }

  /** As {@link #add(byte[], byte[], long)}, the entries being {@code value[from, to)}. */
  private boolean add(byte[] value, int from, int to, byte[] mark, long length) {
    if (activeCount == 0) {
      return false;
    }
    run++;
    for (int e = from; value != null && e + 1 < to; e += BlockValue.ENTRY_BYTES) {
      int slot = BlockValue.slotAt(value, e);
      int s = slot < streamOfSlot.length ? streamOfSlot[slot] - 1 : -1;
      if (s >= 0) {
        runTiers[s] = (run << 4) | BlockValue.tiersAt(value, e);
      }
    }
    for (int m = 0; mark != null && m + 1 < mark.length; m += 2) {
      int p = (((mark[m] & 0xff) << 8) | (mark[m + 1] & 0xff)) - 1;
      for (int s : streamsOfPod[p]) {
        markStamp[s] = run;
      }
    }
    // Every block of the run has the same holders: each still-matching stream that holds it
    // goes on (its stretch of one kind of holding is settled when the kind changes); the others
    // stop for good.
    int kept = 0;
    for (int a = 0; a < activeCount; a++) {
      int s = active[a];
      int listed = runTiers[s];
      int engine = listed >>> 4 == run ? listed & TIER_BITS : 0;
      int t = markStamp[s] == run ? engine | GPU : engine;
      if (t == 0) {
        settle(s);
        any[s] = block;
        continue;
      }
      active[kept++] = s;
      int k = engine != 0 ? t | CONFIRMED : t;
      if (k != kind[s]) {
        settle(s);
        kind[s] = k;
      }
    }
    activeCount = kept;
    block += (int) length;
    return kept > 0;
  }

  /**
   * Credits stream {@code s} with its stretch of one kind of holding, from where it began to the
   * current block, and starts the next one there.
   */
  private void settle(int s) {
    int k = kind[s];
    int from = since[s];
    int length = block - from;
    score[s] += weight[k & TIER_BITS] * length;
    if (confirmed[s] == from && (k & CONFIRMED) != 0) {
      confirmed[s] = block;
    }
    if (gpu[s] == from && (k & GPU) != 0) {
      gpu[s] = block;
    }
    if (gpuCpu[s] == from && (k & GPU_CPU) != 0) {
      gpuCpu[s] = block;
    }
    since[s] = block;
  }

  /** Adds block values in prompt order (no speculative marks), runs of equal entries at a time. */
  boolean addValues(BlockValues values) {
    int i = 0;
    while (i < values.size()) {
      int j = i + 1;
      // Against the block before (the same entries as the run's first): a span's slots that say
      // they are the same as the slot before share its range, which compares without reading it.
      while (j < values.size() && values.sameEntries(j - 1, j)) {
        j++;
      }
      if (!addRun(values.array(i), values.from(i), values.to(i), j - i)) {
        return false;
      }
      i = j;
    }
    return true;
  }

  /** Whether some candidate still matches every block added so far. */
  boolean open() {
    return activeCount > 0;
  }

  /** The matches so far, in candidate order. */
  PodMatch[] matches() {
    for (int a = 0; a < activeCount; a++) {
      int s = active[a];
      settle(s);
      any[s] = block;
    }
    PodMatch[] out = new PodMatch[none.length];
    for (int p = 0; p < out.length; p++) {
      out[p] = match(none[p], streamsOfPod[p]);
    }
    return out;
  }

  private PodMatch match(PodMatch none, int[] own) {
    int depth = 0;
    int confirmedDepth = 0;
    int gpuDepth = 0;
    int gpuCpuDepth = 0;
    double best = 0;
    Map<Integer, Integer> ranks = Map.of();
    for (int s : own) {
      depth = Math.max(depth, any[s]);
      confirmedDepth = Math.max(confirmedDepth, confirmed[s]);
      gpuDepth = Math.max(gpuDepth, gpu[s]);
      gpuCpuDepth = Math.max(gpuCpuDepth, gpuCpu[s]);
      best = Math.max(best, score[s]);
      if (any[s] > 0 && streamRank[s] != NO_RANK) {
        if (ranks.isEmpty()) {
          ranks = Map.of(streamRank[s], any[s]);
        } else {
          if (!(ranks instanceof HashMap)) {
            ranks = new HashMap<>(ranks);
          }
          ranks.put(streamRank[s], any[s]);
        }
      }
    }
    if (depth == 0) {
      return none; // no stream matched a block: no score, no rank, nothing speculative
    }
    return new PodMatch(
        none.pod(), depth, gpuDepth, gpuCpuDepth, best, ranks, depth > confirmedDepth);
  }
}
