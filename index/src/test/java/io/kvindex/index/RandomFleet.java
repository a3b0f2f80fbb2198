package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.TokenKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * A seeded random fleet: 20 pods (some with two ranks) over an engine-key and a token-key model,
 * storing, evicting and clearing blocks of documents that share prefixes, restarting, skipping and
 * repeating sequence numbers. Applies the same batches to two indexes and compares every reply and
 * every lookup.
 */
public final class RandomFleet {
  public static final String ENGINE_MODEL = "fleet-engine";
  public static final String TOKEN_MODEL = "fleet/token:{x}";
  private static final int DOCS = 6;
  private static final int SHORT_DOCUMENTS = 40;
  private static final int BLOCK_SIZE = 4;
  private static final String[] MEDIA = {
    null, null, null, "GPU", "cpu", "CPU", "STORAGE", "FS", "x"
  };

  private final Random random;

  /** Blocks per document: the longest chain the fleet stores. */
  private final int blocks;

  /**
   * Whether events go missing: sequence numbers skip (GAP) or repeat (DUPLICATE), one store in 20
   * loses its first blocks, and cache groups change along a chain, so some blocks are stored under
   * parents the index never saw (always a block's real parent: a block's hash fixes its parent).
   */
  private final boolean lossy;

  private final List<StreamId> streams = new ArrayList<>();
  private final Map<String, List<String>> podsByModel = new HashMap<>();
  private final int[][] docTokens = new int[DOCS][];
  private final Map<StreamId, long[]> tokens = new HashMap<>();
  private final Map<StreamId, Long> seq = new HashMap<>();
  private final Map<StreamId, int[]> prefix = new HashMap<>();
  private final Map<List<Long>, long[]> chains = new HashMap<>();

  public RandomFleet(long seed) {
    this(seed, true);
  }

  /**
   * @param lossy whether events go missing (see {@link #lossy})
   */
  public RandomFleet(long seed, boolean lossy) {
    this(seed, lossy, SHORT_DOCUMENTS);
  }

  /**
   * @param lossy whether events go missing (see {@link #lossy})
   * @param blocks blocks per document (40 for the other constructors); documents share prefixes of
   *     a quarter and a half of that, and stores and removals span up to a quarter and an eighth
   */
  public RandomFleet(long seed, boolean lossy, int blocks) {
    this.lossy = lossy;
    this.blocks = blocks;
    random = new Random(seed);
    for (int d = 0; d < DOCS; d++) {
      docTokens[d] = new int[blocks * BLOCK_SIZE];
      int shared = d == 0 ? 0 : (d % 3) * (blocks / 4) * BLOCK_SIZE;
      for (int i = 0; i < docTokens[d].length; i++) {
        docTokens[d][i] = i < shared ? docTokens[d / 2][i] : random.nextInt(50_000);
      }
    }
    for (int p = 0; p < 20; p++) {
      String model = p % 2 == 0 ? ENGINE_MODEL : TOKEN_MODEL;
      String pod = p % 7 == 3 ? "pod:{" + p + "}/✓" : "pod-" + p;
      podsByModel.computeIfAbsent(model, x -> new ArrayList<>()).add(pod);
      for (int rank = 0; rank < (p % 5 == 0 ? 2 : 1); rank++) {
        StreamId s = new StreamId(model, pod, rank);
        streams.add(s);
        prefix.put(s, new int[DOCS]);
      }
    }
  }

  /** Engine hash of block i of doc d as stream s's engine computes it. */
  private long engineHash(StreamId s, int d, int i) {
    long root = s.model().equals(ENGINE_MODEL) ? 42 : s.pod().hashCode() * 31L + s.dpRank();
    return chains
        .computeIfAbsent(
            List.of(root, (long) d), k -> TokenKeys.chain(root, docTokens[d], BLOCK_SIZE))[i];
  }

  public void run(PrefixIndex a, PrefixIndex b, int steps) {
    Map<StreamId, Lease[]> leases = new HashMap<>();
    for (StreamId s : streams) {
      Lease ta = a.acquireLease(s, "fleet", Duration.ofMinutes(5)).orElseThrow();
      Lease tb = b.acquireLease(s, "fleet", Duration.ofMinutes(5)).orElseThrow();
      leases.put(s, new Lease[] {ta, tb});
    }
    for (int step = 0; step < steps; step++) {
      StreamId s = streams.get(random.nextInt(streams.size()));
      Lease[] t = leases.get(s);
      int roll = random.nextInt(100);
      long next = seq.getOrDefault(s, (long) random.nextInt(1000)) + 1;
      if (roll < 4) {
        PurgeMode mode = roll < 2 ? PurgeMode.RESET_WATERMARK : PurgeMode.KEEP_WATERMARK;
        assertThat(b.purge(s, t[1], mode)).isEqualTo(a.purge(s, t[0], mode));
        java.util.Arrays.fill(prefix.get(s), 0);
        if (mode == PurgeMode.RESET_WATERMARK) {
          seq.put(s, (long) random.nextInt(1000));
        }
        continue;
      }
      long used =
          !lossy
              ? next
              : roll < 7
                  ? next + 1 + random.nextInt(3)
                  : roll < 10 ? next - 1 - random.nextInt(2) : next;
      KvEventBatch batch = batch(s);
      ApplyResult ra = a.apply(s, Events.mode(s), Math.max(0, used), t[0], batch);
      ApplyResult rb = b.apply(s, Events.mode(s), Math.max(0, used), t[1], batch);
      assertThat(rb).as("step %d %s", step, s).isEqualTo(ra);
      if (ra.status() == ApplyStatus.APPLIED) {
        seq.put(s, ra.watermark());
      }
    }
  }

  private KvEventBatch batch(StreamId s) {
    List<KvEvent> events = new ArrayList<>();
    int n = 1 + random.nextInt(3);
    for (int e = 0; e < n; e++) {
      int roll = random.nextInt(100);
      int[] held = prefix.get(s);
      int d = random.nextInt(DOCS);
      if (roll < 3) {
        events.add(AllBlocksCleared.INSTANCE);
        java.util.Arrays.fill(held, 0);
      } else if (roll < 25) {
        int from = random.nextInt(blocks);
        int to = Math.min(blocks, from + 1 + random.nextInt(Math.max(6, blocks / 8)));
        List<Long> hashes = new ArrayList<>();
        for (int i = from; i < to; i++) {
          hashes.add(engineHash(s, d, i));
        }
        if (random.nextInt(10) == 0) {
          hashes.add(random.nextLong());
        }
        events.add(new BlockRemoved(hashes, MEDIA[random.nextInt(MEDIA.length)], group(d)));
        held[d] = Math.min(held[d], from);
      } else {
        int from = random.nextInt(held[d] + 1);
        int to = Math.min(blocks, from + 1 + random.nextInt(Math.max(12, blocks / 4)));
        if (from >= blocks) {
          continue;
        }
        if (random.nextInt(20) == 0 && lossy && to - from > 1) {
          // The store's first blocks went missing (events lost): the rest names its real parent,
          // which the index may never have seen.
          from += 1 + random.nextInt(to - from - 1);
        }
        List<Long> hashes = new ArrayList<>();
        List<Integer> toks = new ArrayList<>();
        for (int i = from; i < to; i++) {
          hashes.add(engineHash(s, d, i));
          for (int k = i * BLOCK_SIZE; k < (i + 1) * BLOCK_SIZE; k++) {
            toks.add(docTokens[d][k]);
          }
        }
        Long parent = from == 0 ? null : engineHash(s, d, from - 1);
        events.add(
            new BlockStored(
                hashes,
                parent,
                toks,
                BLOCK_SIZE,
                null,
                MEDIA[random.nextInt(MEDIA.length)],
                null,
                null,
                group(d),
                null,
                null));
        held[d] = Math.max(held[d], to);
      }
    }
    return KvEventBatch.of(0.0, events, s.dpRank());
  }

  /**
   * The cache group of an event about document d: random when lossy (a chain then also continues in
   * another group, whose index never saw its parent), else fixed per document.
   */
  private Integer group(int d) {
    if (!lossy) {
      return d % 3 == 0 ? null : d % 3 - 1;
    }
    int roll = random.nextInt(10);
    return roll < 6 ? null : roll < 9 ? 0 : 1;
  }

  /** Asserts that {@code rb} (complete) gives every candidate of {@code ra} the same match. */
  public static void assertSameMatches(LookupRequest request, LookupResult ra, LookupResult rb) {
    assertThat(rb.complete()).isTrue();
    assertThat(rb.pods().keySet()).containsExactlyElementsOf(ra.pods().keySet());
    for (String pod : ra.pods().keySet()) {
      PodMatch ma = ra.pods().get(pod);
      PodMatch mb = rb.pods().get(pod);
      assertThat(mb.depth()).as("depth of %s in %s", pod, request).isEqualTo(ma.depth());
      assertThat(mb.gpuDepth()).as("gpu depth of %s", pod).isEqualTo(ma.gpuDepth());
      assertThat(mb.gpuCpuDepth()).as("gpu+cpu depth of %s", pod).isEqualTo(ma.gpuCpuDepth());
      assertThat(mb.rankDepths()).as("ranks of %s", pod).isEqualTo(ma.rankDepths());
      assertThat(mb.score())
          .as("score of %s", pod)
          .isCloseTo(ma.score(), PrefixIndexContract.within());
    }
  }

  public void compareLookups(PrefixIndex a, PrefixIndex b, int count) {
    int found = 0;
    for (int q = 0; q < count; q++) {
      String model = random.nextBoolean() ? ENGINE_MODEL : TOKEN_MODEL;
      KeyMode mode = model.equals(ENGINE_MODEL) ? KeyMode.ENGINE : KeyMode.TOKEN;
      int d = random.nextInt(DOCS);
      int length = 1 + random.nextInt(blocks);
      List<Long> keys = new ArrayList<>();
      if (mode == KeyMode.ENGINE) {
        for (int i = 0; i < length; i++) {
          keys.add(engineHash(new StreamId(model, "any", 0), d, i));
        }
      } else {
        long[] chain = TokenKeys.chain(TokenKeys.root(model, null), docTokens[d], BLOCK_SIZE);
        for (int i = 0; i < length; i++) {
          keys.add(chain[i]);
        }
      }
      Set<String> candidates = new LinkedHashSet<>();
      for (String pod : podsByModel.get(model)) {
        if (random.nextInt(3) > 0) {
          candidates.add(pod);
        }
      }
      candidates.add("ghost");
      int group = random.nextInt(10) == 0 ? 1 : 0;
      LookupRequest request = new LookupRequest(model, mode, Events.array(keys), candidates, group);
      LookupResult ra = a.lookup(request);
      LookupResult rb = b.lookup(request);
      assertSameMatches(request, ra, rb);
      for (String pod : candidates) {
        found += ra.pods().get(pod).depth() > 0 ? 1 : 0;
      }
    }
    assertThat(found)
        .as("pods found holding a prefix (the test is not vacuous)")
        .isGreaterThan(count / 2);
  }
}
