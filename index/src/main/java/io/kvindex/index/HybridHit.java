package io.kvindex.index;

import io.kvindex.common.Check;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.CacheLayout.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The prefix-cache hit vLLM's hybrid coordinator computes for one cache (one data-parallel rank of
 * a pod), from which blocks each of the model's cache groups holds. Immutable and thread-safe.
 *
 * <p>The rule, as vLLM's {@code HybridKVCacheCoordinator} and its per-kind managers apply it:
 *
 * <ul>
 *   <li>Groups of one spec are looked up as one; the spec groups are taken full attention first,
 *       the others in group order. The candidate hit starts at the prompt's length minus one (the
 *       last token is always computed, for its logits).
 *   <li>Full attention: blocks from block 0, left to right, to the first one not held; later passes
 *       only clamp to that.
 *   <li>Sliding window of W tokens in blocks of B: the {@code cdiv(W - 1, B)} blocks ending exactly
 *       at the candidate, scanning right to left for the latest run that long (a shorter run from
 *       block 0 counts: the window covers the whole prefix).
 *   <li>Chunked local attention of chunk C: the blocks before the candidate's chunk count as held;
 *       from the chunk's first block, left to right to the first one not held.
 *   <li>Mamba (align mode) of blocks M: the latest state checkpoint at or before the candidate
 *       whose end is aligned; with fine-grained hits (a Mamba block larger than the hash block),
 *       every hash block's boundary where the group holds a state counts.
 *   <li>Each group either accepts the candidate or shortens it; a pass that shortened it is run
 *       again (once only with exactly two spec groups, full attention first), and the hit is
 *       rounded down to the alignment: the hash block with fine-grained hits, else the least common
 *       multiple of the groups' block sizes.
 * </ul>
 *
 * With EAGLE or another draft model ({@link Eagle}), each group vLLM gives the drop is looked up to
 * one unit past the candidate (its block; a hash block for full attention with fine-grained hits;
 * nothing for Mamba) and gives the last unit back: full attention drops {@code min(alignment,
 * block)} tokens, a sliding window needs one more block (its run's end aligned after the drop) and
 * drops it, Mamba never drops; the drop is taken once per candidate, as the coordinator's {@code
 * eagle_verified} does. vLLM runs no draft beside a chunked-local group that would drop.
 *
 * <p>Not modelled: a full-attention group's fine-grained partial entries (only when its blocks are
 * larger than the hash block, which needs {@code --prefix-match-unit}).
 */
public final class HybridHit {

  /**
   * Which groups drop their last matched block for an EAGLE (or MTP) draft model, whose drafting
   * needs the hidden states of the tokens before the generation point recomputed.
   */
  public enum Eagle {
    /** No draft model: nothing is dropped. */
    OFF,
    /**
     * The groups vLLM marks as holding the draft's layers ({@code is_eagle_group}): a draft's
     * layers are full attention, so full attention drops and the other kinds do not.
     */
    FULL_ATTENTION,
    /**
     * Every group, as vLLM does when no group is marked (and did before it marked them); Mamba
     * still never drops.
     */
    ALL_GROUPS
  }

  /** Which of one spec group's lookup units one cache holds. */
  @FunctionalInterface
  public interface Holds {
    /** Whether the cache holds the group's unit {@code i} (tokens {@code [i*u, (i+1)*u)}). */
    boolean unit(int i);

    /**
     * How many consecutive units the cache holds from unit {@code i} down ({@code i}, {@code i -
     * 1}, ...), at most {@code atMost}: 0 when it does not hold {@code i}. A sliding window's rule
     * asks this once per run rather than unit by unit; implementations that know their units as
     * bits answer it without a call per unit.
     */
    default int runDown(int i, int atMost) {
      int n = 0;
      while (n < atMost && i - n >= 0 && unit(i - n)) {
        n++;
      }
      return n;
    }

    /**
     * A group holding exactly its first {@code units} units (full attention's prefix): its rule is
     * then worked out without asking unit by unit.
     */
    static Holds prefix(int units) {
      return new Prefix(units);
    }
  }

  /** {@link Holds#prefix}: units {@code [0, units)}. */
  private record Prefix(int units) implements Holds {
    @Override
    public boolean unit(int i) {
      return i >= 0 && i < units;
    }

    @Override
    public int runDown(int i, int atMost) {
      return i < 0 || i >= units ? 0 : Math.min(atMost, i + 1);
    }
  }

  /**
   * One cache's hit.
   *
   * @param tokens the hit, in tokens
   * @param groupTokens per spec group ({@link #specGroups} order), the hit its own rule found last
   */
  public record Hit(int tokens, int[] groupTokens) {}

  private final CacheLayout layout;
  private final int hashBlock;
  private final int alignment;
  private final boolean fineGrained;
  private final List<Group> specGroups;
  private final Eagle eagle;
  // Per spec group: EAGLE's margin in tokens when the group drops, else 0 (Mamba: never).
  private final int[] eagleMargin;
  private final long eagleGroups; // bit k: spec group k drops

  // Per spec group, as plain arrays for the hit's loop: its kind, block size, window, unit.
  private final Kind[] kinds;
  private final int[] blocks;
  private final int[] windows;
  private final int[] units;

  /** Exactly two spec groups, full attention first: one pass settles the hit. */
  private final boolean simple;

  /** Why the layout cannot be scored in blocks of the hash block size, or null when it can. */
  private final String unscorable;

  /**
   * Without a draft model.
   *
   * @param layout the model's groups; every block size a multiple of {@code hashBlockSize}
   * @param hashBlockSize tokens per block key (the engine's hash block size)
   */
  public HybridHit(CacheLayout layout, int hashBlockSize) {
    this(layout, hashBlockSize, Eagle.OFF);
  }

  /**
   * @param layout the model's groups; every block size a multiple of {@code hashBlockSize}
   * @param hashBlockSize tokens per block key (the engine's hash block size)
   * @param eagle which groups drop their last matched block for a draft model
   * @throws IllegalArgumentException also when a chunked-local group would drop (vLLM refuses to
   *     run so)
   */
  public HybridHit(CacheLayout layout, int hashBlockSize, Eagle eagle) {
    this.layout = Check.notNull(layout, "layout");
    this.eagle = Check.notNull(eagle, "eagle");
    this.hashBlock = Check.atLeast(hashBlockSize, 1, "hashBlockSize");
    if (layout.groups().isEmpty()) {
      throw new IllegalArgumentException("a hybrid hit needs at least one cache group");
    }
    List<Group> full = new ArrayList<>();
    List<Group> others = new ArrayList<>();
    long lcm = 1;
    boolean fine = false;
    for (Group g : layout.groups()) {
      if (g.blockSize() % hashBlockSize != 0) {
        throw new IllegalArgumentException(
            "group " + g.index() + "'s block size is not a multiple of " + hashBlockSize);
      }
      lcm = lcm / gcd(lcm, g.blockSize()) * g.blockSize();
      fine |= g.kind() == Kind.MAMBA && g.blockSize() > hashBlockSize;
      List<Group> into = g.kind() == Kind.FULL ? full : others;
      if (into.stream().noneMatch(s -> sameSpec(s, g))) {
        into.add(g);
      }
    }
    for (Group g : layout.groups()) {
      // Sliding-window and chunked-local lookups need whole blocks: they turn fine hits off.
      boolean coarseOnly = g.kind() != Kind.FULL && g.kind() != Kind.MAMBA;
      if (coarseOnly && g.blockSize() != hashBlockSize) {
        fine = false;
      }
    }
    this.fineGrained = fine;
    this.alignment = fine ? hashBlockSize : (int) Math.min(lcm, Integer.MAX_VALUE);
    full.addAll(others);
    this.specGroups = List.copyOf(full);
    this.eagleMargin = new int[specGroups.size()];
    long drops = 0;
    for (int k = 0; k < specGroups.size() && eagle != Eagle.OFF; k++) {
      Group g = specGroups.get(k);
      if (eagle == Eagle.FULL_ATTENTION && g.kind() != Kind.FULL) {
        continue;
      }
      if (k >= Long.SIZE) {
        throw new IllegalArgumentException("EAGLE is scored for at most 64 spec groups");
      }
      if (g.kind() == Kind.CHUNKED_LOCAL) {
        throw new IllegalArgumentException(
            "vLLM runs no EAGLE draft that drops a chunked-local group's block (group "
                + g.index()
                + "); set the model's EAGLE setting to match its engines");
      }
      drops |= 1L << k;
      boolean fineUnit = fineGrained && g.kind() == Kind.FULL && g.blockSize() > hashBlockSize;
      eagleMargin[k] = g.kind() == Kind.MAMBA ? 0 : fineUnit ? hashBlockSize : g.blockSize();
    }
    this.eagleGroups = drops;
    int n = specGroups.size();
    kinds = new Kind[n];
    blocks = new int[n];
    windows = new int[n];
    units = new int[n];
    for (int k = 0; k < n; k++) {
      Group g = specGroups.get(k);
      kinds[k] = g.kind();
      blocks[k] = g.blockSize();
      windows[k] = g.window();
      units[k] = unit(g);
    }
    simple = n == 2 && kinds[0] == Kind.FULL;
    unscorable = layout.unscorable(hashBlockSize).orElse(null);
  }

  /**
   * Why a lookup cannot score by this rule ({@link CacheLayout#unscorable(int)} of its layout and
   * hash block size), worked out once; empty when it can.
   */
  public Optional<String> unscorable() {
    return Optional.ofNullable(unscorable);
  }

  /** Which groups drop their last matched block for a draft model. */
  public Eagle eagle() {
    return eagle;
  }

  /** The model's groups this rule scores. */
  public CacheLayout layout() {
    return layout;
  }

  /** Tokens per block key. */
  public int hashBlockSize() {
    return hashBlock;
  }

  private static boolean sameSpec(Group a, Group b) {
    return a.kind() == b.kind() && a.blockSize() == b.blockSize() && a.window() == b.window();
  }

  private static long gcd(long a, long b) {
    return b == 0 ? a : gcd(b, a % b);
  }

  /** The spec groups in the order they are looked up, each by its first group. */
  public List<Group> specGroups() {
    return specGroups;
  }

  /** Tokens every hit is a multiple of. */
  public int alignment() {
    return alignment;
  }

  /**
   * Tokens per lookup unit of a spec group: its block size, or the hash block for a Mamba group
   * with fine-grained hits (its states are looked up at every hash block's boundary).
   */
  public int unit(Group group) {
    return group.kind() == Kind.MAMBA && fineGrained ? hashBlock : group.blockSize();
  }

  /**
   * The hit for a prompt of {@code promptTokens} tokens.
   *
   * @param holds per spec group ({@link #specGroups} order), which of its units the cache holds
   */
  public Hit hit(int promptTokens, Holds[] holds) {
    int[] found = new int[specGroups.size()];
    return new Hit(hit(promptTokens, holds, found), found);
  }

  /**
   * As {@link #hit(int, Holds[])}, without allocating: the hit in tokens is returned, and each spec
   * group's own last hit is written to {@code found} (one entry per spec group, overwritten).
   */
  public int hit(int promptTokens, Holds[] holds, int[] found) {
    checkLengths(holds, found);
    int prefix = holds.length > 0 && holds[0] instanceof Prefix p ? p.units() : -1;
    return hit(promptTokens, prefix, holds, found);
  }

  /**
   * As {@link #hit(int, Holds[], int[])} for a cache whose first spec group (full attention) holds
   * exactly its first {@code firstGroupUnits} units, as {@link Holds#prefix} would say: {@code
   * holds[0]} is not asked.
   */
  public int hitWithPrefix(int promptTokens, int firstGroupUnits, Holds[] holds, int[] found) {
    checkLengths(holds, found);
    return hit(promptTokens, Math.max(0, firstGroupUnits), holds, found);
  }

  private void checkLengths(Holds[] holds, int[] found) {
    if (holds.length != specGroups.size() || found.length != specGroups.size()) {
      throw new IllegalArgumentException(
          "holds and found must have one entry per spec group (" + specGroups.size() + ")");
    }
  }

  /** The hit; {@code prefix}: the units spec group 0 holds from unit 0, or -1 to ask holds[0]. */
  private int hit(int promptTokens, int prefix, Holds[] holds, int[] found) {
    int max = Math.max(0, promptTokens - 1);
    Arrays.fill(found, -1); // -1: not looked up yet (a group's hit is never negative)
    int hit = max;
    long dropped = 0; // bit k: spec group k took its EAGLE drop at the current candidate
    while (true) {
      int candidate = hit;
      for (int k = 0; k < kinds.length; k++) {
        if (kinds[k] == Kind.FULL && found[k] >= 0) {
          candidate = Math.min(candidate, found[k]); // full attention is downward-closed
          continue;
        }
        boolean drop = (eagleGroups & ~dropped & (1L << k)) != 0;
        int limit = drop ? (int) Math.min((long) candidate + eagleMargin[k], max) : candidate;
        int groupHit = groupHit(k, limit, k == 0 ? prefix : -1, holds[k], drop);
        if (drop) {
          dropped |= 1L << k;
        } else if (groupHit < candidate) {
          dropped = 0; // a shorter candidate: each group's drop is taken again
        }
        candidate = groupHit;
        found[k] = candidate;
      }
      if (candidate >= hit) {
        break;
      }
      hit = candidate;
      if (simple) {
        break;
      }
    }
    return hit;
  }

  /**
   * Spec group {@code k}'s hit at most {@code max}; {@code prefix}: the units it holds from unit 0
   * ({@link Holds#prefix}), or -1 to ask {@code holds}; {@code drop}: its EAGLE drop is taken.
   */
  private int groupHit(int k, int max, int prefix, Holds holds, boolean drop) {
    if (prefix >= 0 && (kinds[k] == Kind.SLIDING_WINDOW || kinds[k] == Kind.MAMBA)) {
      holds = new Prefix(prefix); // these kinds ask unit by unit
    }
    return switch (kinds[k]) {
      case FULL -> full(blocks[k], max, prefix, holds, drop);
      case SLIDING_WINDOW -> slidingWindow(blocks[k], windows[k], max, holds, drop);
      case CHUNKED_LOCAL -> chunkedLocal(blocks[k], windows[k], max, prefix, holds);
      case MAMBA -> mamba(units[k], max, holds); // Mamba's finder never drops
      case OTHER ->
          throw new IllegalStateException(
              "group " + specGroups.get(k).index() + " cannot be scored");
    };
  }

  private int full(int b, int max, int prefix, Holds holds, boolean drop) {
    int n;
    if (prefix >= 0) {
      n = Math.min(prefix, max / b);
    } else {
      n = 0;
      while (n < max / b && holds.unit(n)) {
        n++;
      }
    }
    long tokens = (long) n * b;
    if (drop && tokens > 0) {
      tokens -= Math.min(alignment, b);
    }
    return (int) (tokens - tokens % alignment);
  }

  /**
   * A sliding-window group's hit at most {@code max} tokens, its blocks {@code b} tokens and its
   * window {@code window}; {@code drop}: its EAGLE drop is taken. Package-private for its test.
   */
  int slidingWindow(int b, int window, int max, Holds holds, boolean drop) {
    int needed = (window - 1 + b - 1) / b + (drop ? 1 : 0);
    // Right to left, a run at a time: the latest run of `needed` held blocks whose end (after the
    // drop) is aligned; a held block at a misaligned end is passed over, and the run starts below.
    int wanted = Math.max(needed, 1); // a window of one token needs no block before: any held one
    int run = 0;
    int blocks = -1;
    int i = max / b - 1;
    while (i >= 0) {
      int ends = drop ? i : i + 1; // the run's end once the drop is taken
      if (b != alignment && (long) ends * b % alignment != 0) {
        run = 0; // not a run's end: the run, if any, starts below
        i--;
        continue;
      }
      run = holds.runDown(i, wanted);
      if (run >= wanted) {
        blocks = i + 1;
        break;
      }
      if (run <= i) {
        i -= run + 1; // past the run and the block below it, not held
        run = 0;
      } else {
        break; // a run from block 0, shorter than the window
      }
    }
    if (blocks < 0) {
      blocks = alignDown(run, b) / b; // a run from block 0: the window covers the whole prefix
    }
    if (drop && blocks > 0) {
      blocks--;
    }
    return alignDown(blocks, b);
  }

  private static int chunkedLocal(int b, int chunk, int max, int prefix, Holds holds) {
    int start = max > 0 ? max / chunk * chunk / b : 0;
    if (prefix >= 0) {
      return (prefix > start ? Math.min(prefix, max / b) : start) * b;
    }
    int n = start;
    while (n < max / b && holds.unit(n)) {
      n++;
    }
    return n * b;
  }

  private int mamba(int u, int max, Holds holds) {
    for (int i = max / u - 1; i >= 0; i--) {
      if (holds.unit(i) && (u == alignment || (long) (i + 1) * u % alignment == 0)) {
        return (i + 1) * u;
      }
    }
    return 0;
  }

  private int alignDown(int blocks, int b) {
    long tokens = (long) blocks * b;
    return (int) (tokens - tokens % alignment);
  }
}
