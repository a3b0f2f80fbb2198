package io.kvindex.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.ExtraKey;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.hash.BlockHasher;
import io.kvindex.hash.HashAlgorithm;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Hybrid engines publish each cache group's events as vLLM does, keep a sparse group's blocks only
 * where vLLM's default retention does, and report the hit vLLM's coordinator computes.
 */
class HybridEngineTest {
  private static final int BS = 16;
  private static final BlockHasher HASHER = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", BS);

  private static DefaultSimulatedPod pod(ModelKind kind, int capacity, Recorder recorder) {
    DefaultSimulatedPod pod =
        TestPods.start(
            TestPods.config().modelKind(kind).capacityBlocks(capacity).blockSize(BS).build());
    pod.addListener(recorder);
    return pod;
  }

  /** A prompt of {@code length} tokens whose first {@code shared} are those of seed 1's. */
  private static int[] prompt(long seed, int length, int shared) {
    int[] out = TestPods.tokens(seed, length);
    System.arraycopy(TestPods.tokens(1, shared), 0, out, 0, shared);
    return out;
  }

  private static InferenceRequest request(int[] prompt, int outputs) {
    return InferenceRequest.of(prompt, TestPods.tokens(99, outputs));
  }

  private static long[] hashes(int[] prompt) {
    return HASHER.blockHashes(prompt);
  }

  private static List<Long> blocks(long[] hashes, int... indexes) {
    return Arrays.stream(indexes).mapToObj(i -> hashes[i]).toList();
  }

  private static int[] range(int from, int to) {
    return IntStream.range(from, to).toArray();
  }

  private static List<Integer> tokens(int[] prompt, int from, int to) {
    return Arrays.stream(prompt, from, to).boxed().toList();
  }

  private static BlockStored full(long[] h, int[] prompt, int from, int to) {
    return new BlockStored(
        blocks(h, range(from, to)),
        from == 0 ? null : h[from - 1],
        tokens(prompt, from * BS, to * BS),
        BS,
        null,
        "GPU",
        null,
        noKeys(to - from),
        0,
        "full_attention",
        null);
  }

  private static BlockStored group(
      ModelKind kind, List<Long> hashes, Long parent, List<Integer> tokens, int blockSize) {
    return new BlockStored(
        hashes,
        parent,
        tokens,
        blockSize,
        null,
        "GPU",
        null,
        noKeys(hashes.size()),
        1,
        kind.specKind(),
        kind.window());
  }

  private static List<List<ExtraKey>> noKeys(int n) {
    List<List<ExtraKey>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(List.of());
    }
    return out;
  }

  private static List<KvEvent> events(Recorder rec, int from) {
    List<KvEvent> out = new ArrayList<>();
    for (KvEventBatch b : rec.batches.subList(from, rec.batches.size())) {
      out.addAll(b.events());
    }
    return out;
  }

  /** Per cache group, the hashes the recorded events leave cached. */
  private static Map<Integer, Set<Long>> applied(Recorder rec) {
    Map<Integer, Set<Long>> out = new TreeMap<>();
    for (KvEvent e : events(rec, 0)) {
      if (e instanceof BlockStored s) {
        out.computeIfAbsent(s.cacheGroup(), g -> new HashSet<>()).addAll(s.blockHashes());
      } else if (e instanceof BlockRemoved r) {
        out.computeIfAbsent(r.cacheGroup(), g -> new HashSet<>()).removeAll(r.blockHashes());
      }
    }
    return out;
  }

  @Test
  void slidingWindow_storesEveryFullBlockAndTheWindowEndingAtTheReplayBoundary() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(ModelKind.SLIDING_WINDOW, 256, rec)) {
      int[] p = TestPods.tokens(1, 200);
      long[] h = hashes(p);

      Completion first = pod.submit(request(p, 1));

      assertThat(first.cachedTokens()).isZero();
      // The replay boundary is (200 - 1) / 16 * 16 = 192: the window is the cdiv(127, 16) = 8
      // blocks ending there, 4 to 11; the token ids span every block caching passed, 0 to 11.
      assertThat(events(rec, 0))
          .containsExactly(
              full(h, p, 0, 12),
              group(
                  ModelKind.SLIDING_WINDOW, blocks(h, range(4, 12)), null, tokens(p, 0, 192), BS));
      assertThat(pod.cachedGroupBlocks(0))
          .containsEntry(0, Set.copyOf(blocks(h, range(0, 12))))
          .containsEntry(1, Set.copyOf(blocks(h, range(4, 12))));

      Completion again = pod.submit(request(p, 1));

      assertThat(again.cachedTokens()).isEqualTo(192);
      assertThat(rec.size()).as("nothing new is cached").isEqualTo(1);
    }
  }

  @Test
  void slidingWindow_aSharedPrefixMissesUntilItsJunctionIsKept() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(ModelKind.SLIDING_WINDOW, 256, rec)) {
      pod.submit(request(TestPods.tokens(1, 200), 1));
      int[] p = prompt(2, 200, 100);
      long[] h = hashes(p);

      Completion sharing = pod.submit(request(p, 1));

      // Full attention holds blocks 0 to 5 (96 tokens), but the window ending at 96 (blocks 0 to
      // 5) was never kept: the engine's hit is 0. The junction, 96, is kept now, beside the new
      // replay boundary, 192: blocks 0 to 11, less 4 and 5, which the first request keeps.
      assertThat(sharing.cachedTokens()).isZero();
      assertThat(events(rec, 1))
          .containsExactly(
              full(h, p, 6, 12),
              group(
                  ModelKind.SLIDING_WINDOW,
                  blocks(h, 0, 1, 2, 3, 6, 7, 8, 9, 10, 11),
                  null,
                  tokens(p, 0, 192),
                  BS));

      Completion third = pod.submit(request(prompt(3, 200, 100), 1));

      assertThat(third.cachedTokens())
          .as("the window from block 0 covers the prefix")
          .isEqualTo(96);
    }
  }

  @Test
  void slidingWindow_blocksBehindTheWindowAreFreedWithoutBlockRemovedUntilEvicted() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(ModelKind.SLIDING_WINDOW, 30, rec)) {
      int[] p = TestPods.tokens(1, 200);
      long[] h = hashes(p);

      pod.submit(request(p, 40)); // decoding to 239 tokens moves the window past blocks 0 to 6

      assertThat(events(rec, 0)).noneMatch(e -> e instanceof BlockRemoved);
      assertThat(pod.cachedGroupBlocks(0)).containsEntry(1, Set.copyOf(blocks(h, range(4, 12))));
      assertThat(pod.submit(request(p, 1)).cachedTokens())
          .as("the freed window blocks are still hits")
          .isEqualTo(192);

      int before = rec.size();
      int[] other = TestPods.tokens(9, 200);
      pod.submit(request(other, 1));

      List<BlockRemoved> removed =
          events(rec, before).stream()
              .filter(e -> e instanceof BlockRemoved)
              .map(e -> (BlockRemoved) e)
              .toList();
      assertThat(removed).isNotEmpty().allMatch(r -> r.blockHashes().size() == 1);
      assertThat(removed).anyMatch(r -> r.cacheGroup() == 1);
      assertThat(applied(rec))
          .as("the events describe each group's cache")
          .isEqualTo(pod.cachedGroupBlocks(0));
    }
  }

  @Test
  void mamba_keepsTheStateAtTheReplayBoundaryAsAWholeBlockOrAPartialEntry() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(ModelKind.MAMBA, 256, rec)) {
      int[] p = TestPods.tokens(1, 200);
      long[] h = hashes(p);

      pod.submit(request(p, 1));

      // 192 ends Mamba block 2 (of 64 tokens): its end-state, keyed by the hash at 192, parent the
      // hash at 128, the block's 64 tokens.
      assertThat(events(rec, 0))
          .containsExactly(
              full(h, p, 0, 12),
              group(ModelKind.MAMBA, List.of(h[11]), h[7], tokens(p, 128, 192), 64));

      int[] q = TestPods.tokens(5, 150);
      long[] hq = hashes(q);
      int before = rec.size();
      pod.submit(request(q, 1));

      // 144 is inside a Mamba block: a partial tail entry of one hash block.
      assertThat(events(rec, before))
          .containsExactly(
              full(hq, q, 0, 9),
              group(ModelKind.MAMBA, List.of(hq[8]), hq[7], tokens(q, 128, 144), BS));
      assertThat(pod.submit(request(p, 1)).cachedTokens()).isEqualTo(192);
      assertThat(pod.submit(request(q, 1)).cachedTokens()).isEqualTo(144);
    }
  }

  @Test
  void mamba_aStepEndsAtTheJunctionSoItsStateIsKept() {
    Recorder rec = new Recorder();
    try (DefaultSimulatedPod pod = pod(ModelKind.MAMBA, 256, rec)) {
      pod.submit(request(TestPods.tokens(1, 200), 1));
      int[] p = prompt(2, 200, 100);
      long[] h = hashes(p);
      int before = rec.size();

      Completion sharing = pod.submit(request(p, 1));

      assertThat(sharing.cachedTokens()).as("no state at 96 yet").isZero();
      assertThat(rec.batches.subList(before, rec.size()).stream().map(KvEventBatch::events))
          .containsExactly(
              List.of(group(ModelKind.MAMBA, List.of(h[5]), h[4], tokens(p, 80, 96), BS)),
              List.of(
                  full(h, p, 6, 12),
                  group(ModelKind.MAMBA, List.of(h[11]), h[7], tokens(p, 128, 192), 64)));
      assertThat(pod.submit(request(prompt(3, 200, 100), 1)).cachedTokens()).isEqualTo(96);
    }
  }

  @Test
  void hybrid_theOracleSeesTheEnginesHit() {
    Recorder rec = new Recorder();
    for (ModelKind kind : List.of(ModelKind.SLIDING_WINDOW, ModelKind.MAMBA)) {
      try (DefaultSimulatedPod pod = pod(kind, 256, rec)) {
        pod.submit(request(TestPods.tokens(1, 200), 1));
        InferenceRequest sharing = request(prompt(2, 200, 100), 1);

        assertThat(pod.cachedPrefix(sharing, 0).depth()).as("%s before", kind).isZero();
        int reported = pod.submit(sharing).cachedTokens();
        InferenceRequest next = request(prompt(3, 200, 100), 1);
        int predicted = pod.cachedPrefix(next, 0).depth() * BS;

        assertThat(reported).isZero();
        assertThat(predicted).as("%s after", kind).isEqualTo(96);
        assertThat(pod.submit(next).cachedTokens()).isEqualTo(predicted);
      }
    }
  }
}
