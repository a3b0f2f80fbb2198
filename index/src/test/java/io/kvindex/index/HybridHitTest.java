package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.CacheLayout.Kind;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link HybridHit}'s short cuts (a group given as {@link HybridHit.Holds#prefix} or, the first, as
 * a number of units, the hit written into a caller's array) against its general rule, which asks
 * unit by unit, on random caches.
 */
class HybridHitTest {

  static Stream<Arguments> layouts() {
    return Stream.of(
            List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 16, 128)),
            List.of(new Group(0, "full_attention", 16, 0), new Group(1, "mamba", 64, 0)),
            List.of(
                new Group(0, "full_attention", 16, 0),
                new Group(1, "chunked_local_attention", 16, 64)),
            List.of(
                new Group(0, "full_attention", 16, 0),
                new Group(1, "sliding_window", 16, 48),
                new Group(2, "mamba", 64, 0)),
            List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 32, 100)),
            List.of(new Group(0, "full_attention", 32, 0), new Group(1, "sliding_window", 32, 100)),
            List.of(new Group(0, "full_attention", 16, 0)))
        .map(groups -> Arguments.of(new CacheLayout(groups)));
  }

  static Stream<Arguments> layoutsAndDrafts() {
    return layouts()
        .flatMap(
            a ->
                Stream.of(HybridHit.Eagle.values())
                    .filter(e -> e != HybridHit.Eagle.ALL_GROUPS || !hasChunkedLocal(a))
                    .map(e -> Arguments.of(a.get()[0], e)));
  }

  private static boolean hasChunkedLocal(Arguments a) {
    return ((CacheLayout) a.get()[0])
        .groups().stream().anyMatch(g -> g.kind() == Kind.CHUNKED_LOCAL);
  }

  @ParameterizedTest
  @MethodSource("layoutsAndDrafts")
  void hit_prefixHolds_isTheGeneralRulesHit(CacheLayout layout, HybridHit.Eagle eagle) {
    HybridHit rule = new HybridHit(layout, 16, eagle);
    List<Group> spec = rule.specGroups();
    Random random = new Random(layout.encode().hashCode());
    int[] found = new int[spec.size()];
    int[] foundByNumber = new int[spec.size()];
    for (int round = 0; round < 2_000; round++) {
      int firstPrefix = -1;
      int tokens = random.nextInt(1300);
      HybridHit.Holds[] general = new HybridHit.Holds[spec.size()];
      HybridHit.Holds[] fast = new HybridHit.Holds[spec.size()];
      for (int k = 0; k < spec.size(); k++) {
        Group g = spec.get(k);
        int units = tokens / rule.unit(g) + 2;
        // Full attention (and, sometimes, chunked local) as a prefix; the others as random bits.
        boolean prefix =
            g.kind() == Kind.FULL || (g.kind() == Kind.CHUNKED_LOCAL && random.nextBoolean());
        if (prefix) {
          int n = random.nextInt(units + 1);
          general[k] = i -> i < n;
          fast[k] = HybridHit.Holds.prefix(n);
          if (k == 0) {
            firstPrefix = n;
          }
        } else {
          BitSet bits = new BitSet();
          double density = random.nextDouble();
          for (int i = 0; i < units; i++) {
            if (random.nextDouble() < density) {
              bits.set(i);
            }
          }
          general[k] = bits::get;
          fast[k] = bits::get;
        }
      }
      HybridHit.Hit expected = rule.hit(tokens, general);
      int tokensHit = rule.hit(tokens, fast, found);
      assertThat(tokensHit).as("round %d, %d tokens", round, tokens).isEqualTo(expected.tokens());
      assertThat(found).as("round %d", round).containsExactly(expected.groupTokens());
      if (firstPrefix >= 0) {
        HybridHit.Holds[] rest = fast.clone();
        rest[0] = null; // given as a number: not asked
        assertThat(rule.hitWithPrefix(tokens, firstPrefix, rest, foundByNumber))
            .as("round %d, by number", round)
            .isEqualTo(expected.tokens());
        assertThat(foundByNumber).as("round %d", round).containsExactly(expected.groupTokens());
      }
    }
  }

  /**
   * The sliding window's rule asks a run at a time ({@link HybridHit.Holds#runDown}); its hit is
   * the block-by-block scan's, right to left, over random holdings, with and without the EAGLE
   * drop, with blocks the alignment (full attention of the same size) and smaller than it (full
   * attention of 32 beside windows of 16: a run must end on a 32-token boundary).
   */
  @Test
  void slidingWindow_byRuns_isTheBlockByBlockScan() {
    Random random = new Random(5);
    for (int fullBlock : new int[] {16, 32}) {
      HybridHit rule =
          new HybridHit(
              new CacheLayout(
                  List.of(
                      new Group(0, "full_attention", fullBlock, 0),
                      new Group(1, "sliding_window", 16, 128))),
              16);
      for (int round = 0; round < 3_000; round++) {
        int max = random.nextInt(2_200);
        int window = 1 + random.nextInt(300);
        boolean drop = random.nextBoolean();
        BitSet bits = new BitSet();
        double density = 0.3 + 0.7 * random.nextDouble();
        for (int i = 0; i < max / 16 + 2; i++) {
          if (random.nextDouble() < density) {
            bits.set(i);
          }
        }
        // Held as bits that answer runs by themselves, as a lookup's holds do.
        HybridHit.Holds byRuns =
            new HybridHit.Holds() {
              @Override
              public boolean unit(int i) {
                return i >= 0 && bits.get(i);
              }

              @Override
              public int runDown(int i, int atMost) {
                return i < 0 || !bits.get(i) ? 0 : Math.min(atMost, i - bits.previousClearBit(i));
              }
            };
        int expected = blockByBlock(16, window, max, bits, drop, rule.alignment());
        String as = "round " + round + ", max " + max + ", window " + window + ", drop " + drop;
        assertThat(rule.slidingWindow(16, window, max, byRuns, drop)).as(as).isEqualTo(expected);
        assertThat(rule.slidingWindow(16, window, max, i -> i >= 0 && bits.get(i), drop))
            .as(as + ", unit by unit")
            .isEqualTo(expected);
      }
    }
  }

  /** vLLM's sliding-window scan block by block, right to left (the rule's reference). */
  private static int blockByBlock(
      int b, int window, int max, BitSet held, boolean drop, int alignment) {
    int needed = (window - 1 + b - 1) / b + (drop ? 1 : 0);
    int run = 0;
    int blocks = -1;
    for (int i = max / b - 1; i >= 0; i--) {
      if (!held.get(i)) {
        run = 0;
        continue;
      }
      int ends = drop ? i : i + 1;
      if (run == 0 && b != alignment && (long) ends * b % alignment != 0) {
        continue;
      }
      run++;
      if (run >= needed) {
        blocks = i + run;
        break;
      }
    }
    if (blocks < 0) {
      long tokens = (long) run * b;
      blocks = (int) ((tokens - tokens % alignment) / b);
    }
    if (drop && blocks > 0) {
      blocks--;
    }
    long tokens = (long) blocks * b;
    return (int) (tokens - tokens % alignment);
  }

  @Test
  void holdsPrefix_holdsExactlyItsFirstUnits() {
    HybridHit.Holds holds = HybridHit.Holds.prefix(3);
    assertThat(holds.unit(0)).isTrue();
    assertThat(holds.unit(2)).isTrue();
    assertThat(holds.unit(3)).isFalse();
    assertThat(holds.unit(-1)).isFalse();
  }
}
