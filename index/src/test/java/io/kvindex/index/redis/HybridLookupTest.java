package io.kvindex.index.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.CacheLayout;
import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.Connectors;
import io.kvindex.index.HybridHit;
import io.kvindex.index.KeyMode;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hybrid lookups on real Redis against a reference of vLLM's hit rule written here, apart from
 * {@link io.kvindex.index.HybridHit}: the hit is the longest aligned length, below the prompt's
 * length, that every cache group accepts (full attention: every block before it; sliding window:
 * the blocks of the window ending at it; chunked local: the blocks of its chunk before it; Mamba:
 * the state ending at it). The worked cases are vLLM's own.
 */
@UsesRedis
class HybridLookupTest {
  private static final String MODEL = "m";
  private static final long BASE = 1_000;

  private static final CacheLayout GPT_OSS =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 16, 128)));
  private static final CacheLayout MAMBA_HYBRID =
      new CacheLayout(List.of(new Group(0, "full_attention", 16, 0), new Group(1, "mamba", 64, 0)));
  private static final CacheLayout CHUNKED =
      new CacheLayout(
          List.of(
              new Group(0, "full_attention", 16, 0),
              new Group(1, "chunked_local_attention", 16, 64)));
  private static final CacheLayout THREE_KINDS =
      new CacheLayout(
          List.of(
              new Group(0, "full_attention", 16, 0),
              new Group(1, "sliding_window", 16, 48),
              new Group(2, "mamba", 64, 0)));
  private static final CacheLayout WIDER_WINDOW_BLOCKS =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 32, 100)));
  private static final CacheLayout LARGE_BLOCKS =
      new CacheLayout(
          List.of(new Group(0, "full_attention", 32, 0), new Group(1, "sliding_window", 32, 100)));

  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private RedisConnector connector;
  private PrefixIndex index;

  @BeforeEach
  void open(RedisStandalone server) {
    connector = Connectors.connect(server, meters);
    index =
        PrefixIndex.builder()
            .indexName("hybrid")
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
  }

  @AfterEach
  void close() {
    index.close();
    connector.close();
  }

  /** What one pod's cache holds: per group of the layout, which of its units. */
  private record Cache(Map<Integer, BitSet> units) {
    static Cache of(Object... groupThenUnits) {
      Map<Integer, BitSet> units = new LinkedHashMap<>();
      for (int i = 0; i < groupThenUnits.length; i += 2) {
        BitSet bits = new BitSet();
        for (int u : (int[]) groupThenUnits[i + 1]) {
          bits.set(u);
        }
        units.put((Integer) groupThenUnits[i], bits);
      }
      return new Cache(units);
    }
  }

  private static int[] range(int from, int to) {
    return IntStream.range(from, to).toArray();
  }

  static Stream<Arguments> vllmCases() {
    return Stream.of(
        // gpt-oss, prompt of 1000 tokens all cached: full attention 62 blocks (992), the window
        // needs blocks 54-61.
        Arguments.of(
            "swa all cached", GPT_OSS, 1000, Cache.of(0, range(0, 62), 1, range(54, 62)), 992),
        // SWA block 61 evicted, 53-60 held: the window ends at 976.
        Arguments.of(
            "swa tail evicted", GPT_OSS, 1000, Cache.of(0, range(0, 62), 1, range(53, 61)), 976),
        // A prompt sharing 500 tokens with one whose tail the SWA group kept: full attention hits
        // 496, the window there (blocks 23-30) was never kept, so nothing is a hit.
        Arguments.of("swa junction", GPT_OSS, 1000, Cache.of(0, range(0, 31), 1, range(54, 62)), 0),
        // Full attention hits 576 (block 35, segment 2): the window needs blocks 28-35, half of
        // them in segment 1, read for this candidate only once it is asked about.
        Arguments.of(
            "swa window across two segments",
            GPT_OSS,
            1000,
            Cache.of(0, range(0, 36), 1, range(28, 36)),
            576),
        // Full attention hits 4160 (block 259, in the span from block 256): blocks 256-259 of
        // the window are missing, the run 248-255 (segment 15) sets the hit at 4096.
        Arguments.of(
            "swa window in the segment before the span",
            GPT_OSS,
            4200,
            Cache.of(0, range(0, 260), 1, range(248, 256)),
            4096),
        // A short prefix: the window covers it all.
        Arguments.of(
            "swa short prefix", GPT_OSS, 1000, Cache.of(0, range(0, 5), 1, range(0, 5)), 80),
        // A prompt of exactly 64 blocks: the last token is computed, so the hit is 63 blocks.
        Arguments.of(
            "swa whole prompt", GPT_OSS, 1024, Cache.of(0, range(0, 64), 1, range(0, 64)), 1008),
        // Mamba 64 beside full attention 16: fine-grained hits at each 16-token boundary where a
        // state is held (unit 255: the state at 4096).
        Arguments.of(
            "mamba checkpoint",
            MAMBA_HYBRID,
            5000,
            Cache.of(0, range(0, 312), 1, new int[] {255}),
            4096),
        Arguments.of(
            "mamba earlier checkpoint",
            MAMBA_HYBRID,
            5000,
            Cache.of(0, range(0, 312), 1, new int[] {127}),
            2048),
        // Full attention holds 2048 only: a later state does not count.
        Arguments.of(
            "mamba past the prefix",
            MAMBA_HYBRID,
            5000,
            Cache.of(0, range(0, 128), 1, new int[] {255}),
            0),
        // Chunked local of 64: at 176 the chunk starts at 128, blocks 8-10 needed, 8-9 held.
        Arguments.of(
            "chunked local", CHUNKED, 180, Cache.of(0, range(0, 11), 1, new int[] {8, 9}), 160),
        // Sliding-window blocks of 32 beside full attention's of 16: aligned to 32, the window
        // (4 blocks of 32) ends at 672, two full-attention blocks per window block.
        Arguments.of(
            "wider window blocks",
            WIDER_WINDOW_BLOCKS,
            700,
            Cache.of(0, range(0, 43), 1, range(17, 21)),
            672),
        // Full attention 32 and a window of 100 (cdiv(99, 32) = 4 blocks ending at the hit).
        Arguments.of(
            "large blocks", LARGE_BLOCKS, 700, Cache.of(0, range(0, 21), 1, range(17, 21)), 672));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vllmCases")
  void lookup_hybrid_isVllmsHit(String name, CacheLayout layout, int tokens, Cache cache, int hit) {
    int h = hashBlock(layout);
    long[] keys = keys(BASE, tokens / h);
    assertThat(reference(layout, h, tokens, cache)).as("the reference").isEqualTo(hit);
    store(layout, h, keys, "pod", cache);
    PodMatch match = lookup(layout, h, tokens, keys, List.of("pod")).pods().get("pod");
    assertThat(match.depth() * h).isEqualTo(hit);
    assertThat(match.groupTokens()).containsKey(layout.groups().get(0).index());
  }

  static Stream<Arguments> layouts() {
    return Stream.of(GPT_OSS, MAMBA_HYBRID, CHUNKED, THREE_KINDS, WIDER_WINDOW_BLOCKS, LARGE_BLOCKS)
        .map(Arguments::of);
  }

  /** Random caches of several pods, each pod's hit as the reference computes it. */
  @ParameterizedTest
  @MethodSource("layouts")
  void lookup_randomCaches_matchTheReference(CacheLayout layout) {
    int h = hashBlock(layout);
    Random random = new Random(layout.encode().hashCode());
    for (int round = 0; round < 6; round++) {
      int tokens = 1 + random.nextInt(1200);
      long base = BASE + 100_000L * round;
      long[] keys = keys(base, tokens / h);
      Map<String, Cache> caches = new LinkedHashMap<>();
      for (int p = 0; p < 8; p++) {
        caches.put("r" + round + "p" + p, randomCache(layout, h, tokens, random));
      }
      assertHitsAreTheReferences(layout, h, tokens, keys, caches);
    }
  }

  /** Stores each pod's cache, then checks each pod's hit against the reference's. */
  private void assertHitsAreTheReferences(
      CacheLayout layout, int h, int tokens, long[] keys, Map<String, Cache> caches) {
    caches.forEach((pod, cache) -> store(layout, h, keys, pod, cache));
    assertLookupHitsAreTheReferences(layout, h, tokens, keys, caches);
  }

  /** Checks each pod's hit against the reference's for what it holds. */
  private void assertLookupHitsAreTheReferences(
      CacheLayout layout, int h, int tokens, long[] keys, Map<String, Cache> caches) {
    LookupResult result = lookup(layout, h, tokens, keys, List.copyOf(caches.keySet()));
    assertThat(result.complete()).isTrue();
    caches.forEach(
        (pod, cache) ->
            assertThat(result.pods().get(pod).depth() * h)
                .as(pod)
                .isEqualTo(reference(layout, h, tokens, cache)));
  }

  /**
   * A window store whose writer knows no anchor yet (a new ingester, no layout recorded) of blocks
   * an earlier store already located: its holder goes where the group's slots are kept (the
   * full-attention segments), and lookups by segments find it.
   */
  @Test
  void apply_windowStoreWithoutAnAnchor_ofLocatedBlocks_isFound() {
    reopen("hybrid-no-anchor", PrefixIndexBuilder.DEFAULT_SEGMENT_SLOTS);
    long[] keys = chain(9, 32);
    store(GPT_OSS, 16, keys, "a", Cache.of(0, range(0, 32), 1, range(24, 32)));
    reopen("hybrid-no-anchor", PrefixIndexBuilder.DEFAULT_SEGMENT_SLOTS); // knows no anchor
    StreamId b = StreamId.of(MODEL, "b");
    apply(b, 0, stores(GPT_OSS, 16, keys, Cache.of(1, range(24, 32)), null));
    apply(b, 1, stores(GPT_OSS, 16, keys, Cache.of(0, range(0, 32)), null));

    LookupResult result = lookup(GPT_OSS, 16, 32 * 16 + 1, keys, List.of("a", "b"));

    assertThat(result.pods().get("a").depth()).isEqualTo(32);
    assertThat(result.pods().get("b").depth()).isEqualTo(32);
  }

  /**
   * A model with two full-attention groups: a call that stores the window group beside the higher
   * one only keeps the window's slots in the lowest one's segments, the ones lookups read.
   */
  @Test
  void apply_windowStoredBesideAHigherFullAttentionGroup_isFound() {
    CacheLayout twoFull =
        new CacheLayout(
            List.of(
                new Group(0, "full_attention", 16, 0),
                new Group(1, "sliding_window", 16, 128),
                new Group(2, "full_attention", 16, 0)));
    long[] keys = chain(10, 32);
    store(twoFull, 16, keys, "a", Cache.of(0, range(0, 32), 1, range(24, 32), 2, range(0, 32)));
    StreamId b = StreamId.of(MODEL, "b");
    apply(b, 0, stores(twoFull, 16, keys, Cache.of(1, range(24, 32), 2, range(0, 32)), null));
    apply(b, 1, stores(twoFull, 16, keys, Cache.of(0, range(0, 32)), null));

    LookupResult result = lookup(twoFull, 16, 32 * 16 + 1, keys, List.of("a", "b"));

    assertThat(result.pods().get("a").depth()).isEqualTo(32);
    assertThat(result.pods().get("b").depth()).isEqualTo(32);
  }

  /** Closes the index and opens a new one (nothing cached) of another name and segment limit. */
  private void reopen(String name, int segmentSlots) {
    index.close();
    index =
        PrefixIndex.builder()
            .indexName(name)
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .segmentSlots(segmentSlots)
            .build();
  }

  /**
   * A segment's limit counts each group's slots apart: the full-attention segment that keeps the
   * window group's 16 slots beside its own 16 stays a segment at a limit of 16, and overflows once
   * a branch adds slots of its own.
   */
  @Test
  void apply_segmentKeepingAWindowGroup_overflowsAtOneGroupsLimit() {
    reopen("hybrid-limit", 16);
    long[] keys = chain(7, 32);
    Cache all = Cache.of(0, range(0, 32), 1, range(0, 32));
    store(GPT_OSS, 16, keys, "whole", all);
    lookup(GPT_OSS, 16, 32 * 16 + 1, keys, List.of("whole"));
    assertThat(overflowReads("hybrid-limit")).as("lookups through an overflowed segment").isZero();
    long[] branch = chain(8, 32);
    branch[0] = keys[0];
    store(GPT_OSS, 16, branch, "branch", all);
    LookupResult result = lookup(GPT_OSS, 16, 32 * 16 + 1, keys, List.of("whole", "branch"));
    assertThat(overflowReads("hybrid-limit"))
        .as("lookups through an overflowed segment")
        .isPositive();
    assertThat(result.pods().get("whole").depth()).isEqualTo(32);
    assertThat(result.pods().get("branch").depth()).isEqualTo(1);
  }

  private double overflowReads(String indexName) {
    return meters
        .get(io.kvindex.index.IndexMeters.LOOKUP_OVERFLOW_READS)
        .tag("index", indexName)
        .counter()
        .count();
  }

  /**
   * Random caches in an index whose segments overflow past 16 slots of one group, beside 20 chains
   * that branch off each prompt after its first full-attention block: the prompt's first segment
   * overflows, lookups through it read both groups' block fields there (the other groups' units of
   * that segment only), and each pod's hit is still the reference's.
   */
  @ParameterizedTest
  @MethodSource("layouts")
  void lookup_throughOverflowedSegments_matchTheReference(CacheLayout layout) {
    reopen("hybrid-overflow", 16);
    int h = hashBlock(layout);
    Random random = new Random(layout.encode().hashCode() + 4);
    for (int round = 0; round < 4; round++) {
      int tokens = 1 + random.nextInt(round % 2 == 0 ? 1200 : 6000); // past block 256: spans
      long base = BASE + 20_000_000L + 100_000L * round;
      long[] keys = keys(base, tokens / h);
      int shared = layout.groups().get(0).blockSize() / h;
      for (int c = 0; c < 20 && keys.length > shared; c++) {
        long[] branch = Arrays.copyOf(keys, Math.min(keys.length, 64));
        for (int i = shared; i < branch.length; i++) {
          branch[i] = base + 50_000L + 1_000L * c + i;
        }
        Map<Integer, BitSet> all = new LinkedHashMap<>();
        for (Group g : layout.groups()) {
          BitSet bits = new BitSet();
          bits.set(0, branch.length * h / unit(layout, h, g));
          all.put(g.index(), bits);
        }
        store(layout, h, branch, "branches" + round + "c" + c, new Cache(all));
      }
      Map<String, Cache> caches = new LinkedHashMap<>();
      for (int p = 0; p < 8; p++) {
        caches.put("ov" + round + "p" + p, randomCache(layout, h, tokens, random));
      }
      assertHitsAreTheReferences(layout, h, tokens, keys, caches);
    }
    assertThat(overflowReads("hybrid-overflow"))
        .as("lookups through overflowed segments")
        .isPositive();
  }

  /**
   * Random caches, then about a third of each group's units removed from the GPU, half of those
   * held on the CPU too (so they stay): a sparse group's slots, kept in the full-attention group's
   * segments below block 256 and in its own spans past it, follow its removes, and each pod's hit
   * is the reference's for what it has left.
   */
  @ParameterizedTest
  @MethodSource("layouts")
  void lookup_randomCachesAfterRemoves_matchTheReference(CacheLayout layout) {
    int h = hashBlock(layout);
    Random random = new Random(layout.encode().hashCode() + 3);
    for (int round = 0; round < 4; round++) {
      int tokens = 1 + random.nextInt(round % 2 == 0 ? 1200 : 6000); // past block 256: spans
      long base = BASE + 9_000_000L + 100_000L * round;
      long[] keys = keys(base, tokens / h);
      Map<String, Cache> left = new LinkedHashMap<>();
      for (int p = 0; p < 8; p++) {
        Cache stored = randomCache(layout, h, tokens, random);
        Map<Integer, BitSet> removed = new LinkedHashMap<>();
        Map<Integer, BitSet> onCpu = new LinkedHashMap<>();
        Map<Integer, BitSet> kept = new LinkedHashMap<>();
        stored
            .units()
            .forEach(
                (g, units) -> {
                  BitSet gone = new BitSet();
                  BitSet cpu = new BitSet();
                  units.stream()
                      .filter(u -> random.nextInt(3) == 0)
                      .forEach(
                          u -> {
                            gone.set(u);
                            if (random.nextBoolean()) {
                              cpu.set(u);
                            }
                          });
                  BitSet stays = (BitSet) units.clone();
                  stays.andNot(gone);
                  stays.or(cpu);
                  removed.put(g, gone);
                  onCpu.put(g, cpu);
                  kept.put(g, stays);
                });
        String pod = "rm" + round + "p" + p;
        StreamId stream = StreamId.of(MODEL, pod);
        apply(stream, 0, stores(layout, h, keys, stored, null));
        apply(stream, 1, stores(layout, h, keys, new Cache(onCpu), "CPU"));
        apply(stream, 2, removes(layout, h, keys, new Cache(removed), "GPU"));
        left.put(pod, new Cache(kept));
      }
      assertLookupHitsAreTheReferences(layout, h, tokens, keys, left);
    }
  }

  /**
   * Prompts past chain position 256, whose blocks the index keeps 256 to a span field: each pod
   * holds a random full-attention prefix and, in the other groups, long runs (a random range with a
   * few holes, or all of it), so that many consecutive units share their holders across spans and
   * 64-unit words; each pod's hit as the reference computes it.
   */
  @ParameterizedTest
  @MethodSource("layouts")
  void lookup_longPromptsWithLongRuns_matchTheReference(CacheLayout layout) {
    int h = hashBlock(layout);
    Random random = new Random(layout.encode().hashCode() + 2);
    for (int round = 0; round < 2; round++) {
      int tokens = 300 * 64 + random.nextInt(400 * 64);
      long base = BASE + 5_000_000L + 1_000_000L * round;
      long[] keys = keys(base, tokens / h);
      Map<String, Cache> caches = new LinkedHashMap<>();
      for (int p = 0; p < 6; p++) {
        Map<Integer, BitSet> units = new LinkedHashMap<>();
        for (Group g : layout.groups()) {
          int n = tokens / unit(layout, h, g);
          BitSet bits = new BitSet();
          if (g.kind() == CacheLayout.Kind.FULL) {
            bits.set(0, p == 0 ? n : random.nextInt(n + 1));
          } else {
            int from = p % 2 == 0 ? 0 : random.nextInt(n / 2);
            bits.set(from, from + random.nextInt(n - from + 1));
            for (int hole = random.nextInt(3); hole > 0; hole--) {
              bits.clear(random.nextInt(Math.max(1, n)));
            }
          }
          units.put(g.index(), bits);
        }
        caches.put("long" + round + "p" + p, new Cache(units));
      }
      assertHitsAreTheReferences(layout, h, tokens, keys, caches);
    }
  }

  /**
   * Random caches of pods with two data-parallel ranks each: a pod's hit is its best rank's, and
   * each rank with a hit has its own depth, as the reference computes them per rank.
   */
  @ParameterizedTest
  @MethodSource("layouts")
  void lookup_randomCachesOfTwoRanks_matchTheReferencePerRank(CacheLayout layout) {
    int h = hashBlock(layout);
    Random random = new Random(layout.encode().hashCode() + 1);
    for (int round = 0; round < 4; round++) {
      int tokens = 1 + random.nextInt(1200);
      long base = BASE + 100_000L * round;
      long[] keys = keys(base, tokens / h);
      List<String> pods = new ArrayList<>();
      Map<String, Map<Integer, Integer>> expected = new LinkedHashMap<>();
      for (int p = 0; p < 6; p++) {
        String pod = "r" + round + "p" + p;
        Map<Integer, Integer> ranks = new LinkedHashMap<>();
        for (int rank = 0; rank < 2; rank++) {
          Cache cache = randomCache(layout, h, tokens, random);
          store(layout, h, keys, new StreamId(MODEL, pod, rank), cache);
          int hit = reference(layout, h, tokens, cache);
          if (hit > 0) {
            ranks.put(rank, hit / h);
          }
        }
        pods.add(pod);
        expected.put(pod, ranks);
      }
      LookupResult result = lookup(layout, h, tokens, keys, pods);
      assertThat(result.complete()).isTrue();
      for (String pod : pods) {
        PodMatch match = result.pods().get(pod);
        int best = expected.get(pod).values().stream().mapToInt(d -> d).max().orElse(0);
        assertThat(match.depth()).as(pod).isEqualTo(best);
        assertThat(match.rankDepths()).as(pod).isEqualTo(expected.get(pod));
      }
    }
  }

  /**
   * vLLM's default retention: each prompt's full-attention blocks and, in the sliding-window group,
   * only the window ending at the prefix, stored under a parent that group never kept. Its blocks
   * are located by the full-attention chain, so nothing is unlocated and every lookup reads both
   * groups by segments, with vLLM's hits; whichever group's store the engine publishes first.
   */
  @Test
  void apply_slidingWindowTails_areLocatedByTheFullAttentionChain() {
    Random random = new Random(3);
    int prompts = 4;
    int blocks = 300; // past position 256: spans too
    List<String> pods = new ArrayList<>();
    int[][] depths = new int[prompts][6];
    for (int p = 0; p < 6; p++) {
      String pod = "pod" + p;
      pods.add(pod);
      StreamId stream = StreamId.of(MODEL, pod);
      var lease = index.acquireLease(stream, "owner", Duration.ofMinutes(5)).orElseThrow();
      for (int k = 0; k < prompts; k++) {
        long[] keys = chain(k, blocks);
        int d = 9 + random.nextInt(blocks - 9);
        depths[k][p] = d;
        List<KvEvent> events = new ArrayList<>();
        events.add(groupStore(keys, 0, d, 0, "full_attention", null));
        events.add(p % 2 == 0 ? 1 : 0, groupStore(keys, d - 8, d, 1, "sliding_window", 128));
        index.apply(stream, KeyMode.ENGINE, k, lease, KvEventBatch.of(0.0, events, null));
      }
    }
    byte[] blocksKey = new KeySchema("hybrid", 1).blocks(0);
    var redis = connector.commands();
    byte[] unlocated =
        redis.hget(blocksKey, KeySchema.UNLOCATED_FIELD).toCompletableFuture().join();
    assertThat(unlocated == null ? "0" : new String(unlocated, StandardCharsets.US_ASCII))
        .as("unlocated blocks")
        .isEqualTo("0");
    assertThat(redis.hget(blocksKey, KeySchema.UNLOCATED_HEADS_FIELD).toCompletableFuture().join())
        .as("unlocated heads")
        .isNull();
    // The window group's slots below block 256 are in the full-attention group's segments (offsets
    // from 32, group 1's), past it in spans of its own.
    byte[] windowPrefix = HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 1);
    byte[] fullPrefix = HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0);
    List<String> windowFields = new ArrayList<>();
    int windowSlots = 0;
    for (byte[] field : redis.hkeys(blocksKey).toCompletableFuture().join()) {
      if (field.length != 20) {
        continue;
      }
      String kind = new String(field, 18, 2, StandardCharsets.US_ASCII);
      if (Arrays.equals(field, 0, windowPrefix.length, windowPrefix, 0, windowPrefix.length)) {
        windowFields.add(kind);
      } else if (kind.equals("/s")
          && Arrays.equals(field, 0, fullPrefix.length, fullPrefix, 0, fullPrefix.length)) {
        byte[] value = redis.hget(blocksKey, field).toCompletableFuture().join();
        windowSlots +=
            (int) SegmentValue.decode(value).slots().stream().filter(s -> s.offset() >= 32).count();
      }
    }
    assertThat(windowFields).as("the window group's segment and span fields").containsOnly("/S");
    assertThat(windowSlots)
        .as("the window group's slots in full attention's segments")
        .isPositive();
    double blockReads = blockReads();
    for (int k = 0; k < prompts; k++) {
      LookupResult result = lookup(GPT_OSS, 16, blocks * 16 + 1, chain(k, blocks), pods);
      for (int p = 0; p < pods.size(); p++) {
        assertThat(result.pods().get(pods.get(p)).depth()).as("pod %d", p).isEqualTo(depths[k][p]);
      }
    }
    assertThat(blockReads() - blockReads).as("lookups by block fields").isZero();
  }

  /**
   * A window block stored before any pod's full attention holds its key: unlocated, until a store
   * of that key places it; from then on lookups through it read block fields, and find it.
   */
  @Test
  void lookup_windowStoredBeforeItsFullAttentionBlock_isFoundOnceThatIsStored() {
    long[] keys = chain(0, 40);
    StreamId early = StreamId.of(MODEL, "early");
    var lease = index.acquireLease(early, "owner", Duration.ofMinutes(5)).orElseThrow();
    // The window ending at 30 blocks, and full attention up to it, published in two batches.
    index.apply(
        early,
        KeyMode.ENGINE,
        0,
        lease,
        KvEventBatch.of(0.0, List.of(groupStore(keys, 22, 30, 1, "sliding_window", 128)), null));
    index.apply(
        early,
        KeyMode.ENGINE,
        1,
        lease,
        KvEventBatch.of(0.0, List.of(groupStore(keys, 0, 30, 0, "full_attention", null)), null));
    LookupResult result = lookup(GPT_OSS, 16, 40 * 16, keys, List.of("early"));
    assertThat(result.pods().get("early").depth()).isEqualTo(30);
  }

  private static long[] chain(int k, int blocks) {
    return keys(BASE + 10_000L * k, blocks);
  }

  /** Consecutive block keys from {@code first}. */
  private static long[] keys(long first, int blocks) {
    return LongStream.range(first, first + blocks).toArray();
  }

  private static BlockStored groupStore(
      long[] keys, int from, int to, int group, String kind, Integer window) {
    List<Long> hashes = new ArrayList<>();
    for (int i = from; i < to; i++) {
      hashes.add(keys[i]);
    }
    return new BlockStored(
        hashes,
        from == 0 ? null : keys[from - 1],
        List.of(),
        16,
        null,
        null,
        null,
        null,
        group,
        kind,
        window);
  }

  private double blockReads() {
    return meters
        .get(io.kvindex.index.IndexMeters.LOOKUP_BLOCK_READS)
        .tag("index", "hybrid")
        .counter()
        .count();
  }

  /** A single-group model's lookup is unchanged: its plain lookup gives the prefix. */
  @Test
  void lookup_fullAttentionOnly_isThePrefix() {
    CacheLayout full = new CacheLayout(List.of(new Group(0, "full_attention", 16, 0)));
    long[] keys = keys(BASE, 10);
    store(full, 16, keys, "pod", Cache.of(0, range(0, 7)));
    assertThat(full.hybrid()).isFalse();
    LookupResult plain =
        index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of("pod")));
    assertThat(plain.pods().get("pod").depth()).isEqualTo(7);
    assertThat(plain.pods().get("pod").groupTokens()).isEmpty();
  }

  /** The layout ingesters record is what routers read; a redeployed model's replaces it. */
  @Test
  void cacheLayout_noted_isReadBackAndReplaced() {
    assertThat(index.cacheLayoutAsync(MODEL).join()).isEmpty();
    assertThat(index.noteCacheLayoutAsync(MODEL, GPT_OSS).join()).isTrue();
    assertThat(index.cacheLayoutAsync(MODEL).join()).contains(GPT_OSS);
    index.noteCacheLayoutAsync(MODEL, MAMBA_HYBRID).join();
    assertThat(index.cacheLayoutAsync(MODEL).join()).contains(MAMBA_HYBRID);
  }

  private Cache randomCache(CacheLayout layout, int h, int tokens, Random random) {
    Map<Integer, BitSet> units = new LinkedHashMap<>();
    for (Group g : layout.groups()) {
      int unit = unit(layout, h, g);
      int n = tokens / unit;
      BitSet bits = new BitSet();
      if (g.kind() == CacheLayout.Kind.FULL) {
        bits.set(0, n == 0 ? 0 : random.nextInt(n + 1));
      } else {
        double density = random.nextDouble();
        for (int i = 0; i < n; i++) {
          if (random.nextDouble() < density) {
            bits.set(i);
          }
        }
      }
      units.put(g.index(), bits);
    }
    return new Cache(units);
  }

  /**
   * The lookup by layout; the same by a rule made once (as a router holds it per model), read and
   * decoded on the calling thread, must answer the same.
   */
  private LookupResult lookup(
      CacheLayout layout, int h, int tokens, long[] keys, List<String> pods) {
    LookupRequest request = LookupRequest.of(MODEL, KeyMode.ENGINE, keys, pods);
    LookupResult byLayout = index.lookupAsync(request, layout, h, tokens).join();
    LookupResult byRule = index.lookup(request, new HybridHit(layout, h), tokens);
    assertThat(byRule.complete()).isEqualTo(byLayout.complete());
    assertThat(byRule.pods()).isEqualTo(byLayout.pods());
    return byLayout;
  }

  /** Each group's held units as the engine stores them: one store per unit, under its parent. */
  private void store(CacheLayout layout, int h, long[] keys, String pod, Cache cache) {
    store(layout, h, keys, StreamId.of(MODEL, pod), cache);
  }

  /** As {@link #store(CacheLayout, int, long[], String, Cache)}, as one rank's stream. */
  private void store(CacheLayout layout, int h, long[] keys, StreamId stream, Cache cache) {
    apply(stream, 0, stores(layout, h, keys, cache, null));
  }

  private void apply(StreamId stream, long seq, List<KvEvent> events) {
    var lease = index.acquireLease(stream, "owner", Duration.ofMinutes(5)).orElseThrow();
    index.apply(stream, KeyMode.ENGINE, seq, lease, KvEventBatch.of(0.0, events, null));
  }

  /** Each group's held units as the engine stores them in a tier: one store per unit. */
  private static List<KvEvent> stores(
      CacheLayout layout, int h, long[] keys, Cache cache, String medium) {
    List<KvEvent> events = new ArrayList<>();
    for (Group g : layout.groups()) {
      int per = unit(layout, h, g) / h;
      BitSet bits = cache.units().getOrDefault(g.index(), new BitSet());
      for (int u = bits.nextSetBit(0); u >= 0; u = bits.nextSetBit(u + 1)) {
        if ((u + 1) * per > keys.length) {
          break;
        }
        Long parent = u == 0 ? null : keys[u * per - 1];
        events.add(
            new BlockStored(
                List.of(keys[(u + 1) * per - 1]),
                parent,
                List.of(),
                per * h,
                null,
                medium,
                null,
                null,
                g.index(),
                g.specKind(),
                g.kind() == CacheLayout.Kind.SLIDING_WINDOW ? g.window() : null));
      }
    }
    return events;
  }

  /** Each group's units removed from a tier, one remove per group. */
  private static List<KvEvent> removes(
      CacheLayout layout, int h, long[] keys, Cache cache, String medium) {
    List<KvEvent> events = new ArrayList<>();
    for (Group g : layout.groups()) {
      int per = unit(layout, h, g) / h;
      BitSet bits = cache.units().getOrDefault(g.index(), new BitSet());
      List<Long> hashes = new ArrayList<>();
      for (int u = bits.nextSetBit(0); u >= 0 && (u + 1) * per <= keys.length; ) {
        hashes.add(keys[(u + 1) * per - 1]);
        u = bits.nextSetBit(u + 1);
      }
      if (!hashes.isEmpty()) {
        events.add(new BlockRemoved(hashes, medium, g.index()));
      }
    }
    return events;
  }

  // The reference: written from vLLM's managers' semantics, not from HybridHit.

  private static int hashBlock(CacheLayout layout) {
    return layout.groups().stream()
        .mapToInt(Group::blockSize)
        .reduce(HybridLookupTest::gcd)
        .orElseThrow();
  }

  private static int gcd(int a, int b) {
    return b == 0 ? a : gcd(b, a % b);
  }

  private static boolean fineGrained(CacheLayout layout, int h) {
    boolean mambaLarger =
        layout.groups().stream()
            .anyMatch(g -> g.kind() == CacheLayout.Kind.MAMBA && g.blockSize() > h);
    boolean coarseLarger =
        layout.groups().stream()
            .anyMatch(
                g ->
                    (g.kind() == CacheLayout.Kind.SLIDING_WINDOW
                            || g.kind() == CacheLayout.Kind.CHUNKED_LOCAL)
                        && g.blockSize() != h);
    return mambaLarger && !coarseLarger;
  }

  private static int unit(CacheLayout layout, int h, Group g) {
    return g.kind() == CacheLayout.Kind.MAMBA && fineGrained(layout, h) ? h : g.blockSize();
  }

  private static int reference(CacheLayout layout, int h, int tokens, Cache cache) {
    int lcm =
        layout.groups().stream().mapToInt(Group::blockSize).reduce(1, (a, b) -> a / gcd(a, b) * b);
    int alignment = fineGrained(layout, h) ? h : lcm;
    for (int hit = Math.max(0, tokens - 1); hit > 0; hit--) {
      if (hit % alignment != 0) {
        continue;
      }
      int at = hit;
      boolean all = layout.groups().stream().allMatch(g -> accepts(layout, h, g, at, cache));
      if (all) {
        return hit;
      }
    }
    return 0;
  }

  private static boolean accepts(CacheLayout layout, int h, Group g, int hit, Cache cache) {
    int u = unit(layout, h, g);
    BitSet held = cache.units().getOrDefault(g.index(), new BitSet());
    if (hit % u != 0) {
      return false;
    }
    int end = hit / u;
    int from =
        switch (g.kind()) {
          case FULL -> 0;
          case SLIDING_WINDOW -> Math.max(0, end - (g.window() - 1 + u - 1) / u);
          case CHUNKED_LOCAL -> hit / g.window() * g.window() / u;
          case MAMBA -> end - 1;
          case OTHER -> throw new IllegalArgumentException();
        };
    for (int i = from; i < end; i++) {
      if (!held.get(i)) {
        return false;
      }
    }
    return true;
  }
}
