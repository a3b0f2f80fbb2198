package io.kvindex.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.CacheLayout.Group;
import io.kvindex.index.HybridHit.Eagle;
import java.util.List;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The hit with an EAGLE draft model, as vLLM's coordinator computes it: each case worked by hand
 * from {@code HybridKVCacheCoordinator.find_longest_cache_hit} and the managers' drop (the gpt-oss
 * rows are the reference's worked example: a 1000-token prompt, blocks of 16, a window of 128).
 */
class HybridHitEagleTest {
  private static final CacheLayout FULL = layout(new Group(0, "full_attention", 16, 0));
  private static final CacheLayout GPT_OSS =
      layout(new Group(0, "full_attention", 16, 0), new Group(1, "sliding_window", 16, 128));
  private static final CacheLayout MAMBA =
      layout(new Group(0, "full_attention", 16, 0), new Group(1, "mamba", 64, 0));
  private static final CacheLayout MAMBA_BIG =
      layout(new Group(0, "full_attention", 64, 0), new Group(1, "mamba", 64, 0));

  private static final IntPredicate ALL = i -> true;

  static Stream<Arguments> cases() {
    return Stream.of(
        // One full-attention group (vLLM's unitary coordinator drops the same block).
        row("full, 160 tokens all held", FULL, 160, Eagle.OFF, 144, ALL),
        row("full, 160 tokens all held", FULL, 160, Eagle.FULL_ATTENTION, 128, ALL),
        row("full, 160 tokens all held", FULL, 160, Eagle.ALL_GROUPS, 128, ALL),
        row("full, 30 blocks of 1000 held", FULL, 1000, Eagle.ALL_GROUPS, 464, i -> i < 30),
        row("full, one block held", FULL, 1000, Eagle.FULL_ATTENTION, 0, i -> i < 1),
        row("full, 17 tokens, one block", FULL, 17, Eagle.FULL_ATTENTION, 0, ALL),
        // gpt-oss: full attention first, then the window; simple hybrid (one pass).
        row("gpt-oss, all held", GPT_OSS, 1000, Eagle.OFF, 992, ALL, ALL),
        row("gpt-oss, all held", GPT_OSS, 1000, Eagle.FULL_ATTENTION, 976, ALL, ALL),
        row("gpt-oss, all held", GPT_OSS, 1000, Eagle.ALL_GROUPS, 976, ALL, ALL),
        // The window's block 61 evicted: without a draft the window at 976 serves (blocks 53-60);
        // a dropping window needs one block more past its hit, so it ends at 960 (52-60, less 60).
        row("gpt-oss, window block 61 gone", GPT_OSS, 1000, Eagle.OFF, 976, ALL, i -> i != 61),
        row(
            "gpt-oss, window block 61 gone",
            GPT_OSS,
            1000,
            Eagle.FULL_ATTENTION,
            976,
            ALL,
            i -> i != 61),
        row(
            "gpt-oss, window block 61 gone",
            GPT_OSS,
            1000,
            Eagle.ALL_GROUPS,
            960,
            ALL,
            i -> i != 61),
        // Only the 9 window blocks 53-61 held: the dropping window takes exactly them.
        row(
            "gpt-oss, window blocks 53-61",
            GPT_OSS,
            1000,
            Eagle.ALL_GROUPS,
            976,
            ALL,
            i -> i >= 53 && i <= 61),
        // Only 8 blocks 53-60: enough without the drop, one short with it.
        row(
            "gpt-oss, window blocks 53-60",
            GPT_OSS,
            1000,
            Eagle.FULL_ATTENTION,
            976,
            ALL,
            i -> i >= 53 && i <= 60),
        row(
            "gpt-oss, window blocks 53-60",
            GPT_OSS,
            1000,
            Eagle.ALL_GROUPS,
            0,
            ALL,
            i -> i >= 53 && i <= 60),
        // A short prompt: the window covers the whole prefix (a run from block 0), less the drop.
        row("gpt-oss, 100 tokens", GPT_OSS, 100, Eagle.ALL_GROUPS, 80, ALL, ALL),
        // Mamba never drops and gets no margin: with fine-grained hits (Mamba blocks of 64 over
        // hash blocks of 16) its state at full attention's dropped hit serves.
        row("mamba, every state", MAMBA, 1000, Eagle.OFF, 992, ALL, ALL),
        row("mamba, every state", MAMBA, 1000, Eagle.ALL_GROUPS, 976, ALL, ALL),
        row("mamba, states at 64s", MAMBA, 1000, Eagle.ALL_GROUPS, 960, ALL, i -> (i + 1) % 4 == 0),
        row("mamba, states at 64s", MAMBA, 1000, Eagle.OFF, 960, ALL, i -> (i + 1) % 4 == 0),
        // Blocks of 64 in both groups over hash blocks of 16 (fine-grained hits): full attention
        // drops one hash block, min(alignment, block), not a whole block.
        row("mamba, blocks of 64", MAMBA_BIG, 1000, Eagle.OFF, 960, ALL, ALL),
        row("mamba, blocks of 64", MAMBA_BIG, 1000, Eagle.FULL_ATTENTION, 944, ALL, ALL),
        row("mamba, blocks of 64", MAMBA_BIG, 1000, Eagle.ALL_GROUPS, 944, ALL, ALL));
  }

  @ParameterizedTest(name = "{0}, {3}")
  @MethodSource("cases")
  void hit_withDraftModel_isVllmsHit(
      String name, CacheLayout layout, int prompt, Eagle eagle, int expected, IntPredicate[] held) {
    HybridHit rule = new HybridHit(layout, 16, eagle);
    HybridHit.Holds[] holds = new HybridHit.Holds[held.length];
    for (int k = 0; k < held.length; k++) {
      holds[k] = held[k]::test;
    }

    assertThat(rule.hit(prompt, holds).tokens()).isEqualTo(expected);
  }

  @Test
  void new_chunkedLocalGroupThatWouldDrop_isRefusedAsVllmRefusesIt() {
    CacheLayout llama4 =
        layout(
            new Group(0, "full_attention", 16, 0), new Group(1, "chunked_local_attention", 16, 64));

    assertThatThrownBy(() -> new HybridHit(llama4, 16, Eagle.ALL_GROUPS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chunked-local group");
    assertThat(new HybridHit(llama4, 16, Eagle.FULL_ATTENTION).eagle())
        .isEqualTo(Eagle.FULL_ATTENTION);
  }

  private static Arguments row(
      String name,
      CacheLayout layout,
      int prompt,
      Eagle eagle,
      int expected,
      IntPredicate... held) {
    return Arguments.of(name, layout, prompt, eagle, expected, held);
  }

  private static CacheLayout layout(Group... groups) {
    return new CacheLayout(List.of(groups));
  }
}
