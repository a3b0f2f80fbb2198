package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.PodMatch;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ObservationTest {
  private static final int BS = 16;

  /**
   * The engine never counts the prompt's last token: a 64-token prompt (4 full blocks) cached whole
   * reports 48 tokens, so an index that holds all 4 blocks predicted exactly.
   */
  @ParameterizedTest(name = "{0} prompt tokens, {1} predicted, {2} cached -> {3}")
  @CsvSource({
    // full-prompt hit: one block less on both sides
    "64, 4, 48, 0",
    // a partial last block: the last full block is reportable
    "70, 4, 64, 0",
    // the index thought the pod warmer
    "70, 4, 32, 2",
    // the engine held more than the index listed
    "70, 1, 64, -3",
    // cached tokens that are not block-aligned (a connector's chunk): whole blocks only
    "70, 2, 40, 0",
    // a prompt shorter than a block: nothing is ever reportable
    "10, 0, 0, 0",
    // a one-block prompt: its only block holds the last token
    "16, 1, 0, 0",
  })
  void errorBlocks_likeWithLike(int prompt, int predicted, int cached, int error) {
    Observation o = new Observation("m", "pod-a", predicted, prompt, cached);
    assertThat(o.errorBlocks(BS)).isEqualTo(error);
  }

  @Test
  void of_takesThePicksPodAndMatchedBlocks() {
    Pick pick = new Pick("pod-3", Pick.Reason.LONGEST_PREFIX, 7, false);
    Observation o = Observation.of("m", pick, 200, 96);
    assertThat(o.pod()).isEqualTo("pod-3");
    assertThat(o.predictedBlocks()).isEqualTo(7);
    assertThat(o.actual(BS)).isEqualTo(6);
    assertThat(o.errorBlocks(BS)).isEqualTo(1);
  }

  @Test
  void of_scores_carriesThePromptsBlocks_rankUnknown() {
    long[] keys = {1, 2, 3, 4};
    Scores scores =
        new Scores(
            "m",
            BS,
            keys,
            1,
            List.of(new PodMatch("pod-3", 3, 3, 3, 3.0, Map.of(0, 1, 1, 3))),
            Scores.Outcome.HIT);
    Observation o =
        Observation.of(scores, new Pick("pod-3", Pick.Reason.LONGEST_PREFIX, 3, false), 65, 48);
    assertThat(o.model()).isEqualTo("m");
    assertThat(o.blockKeys()).isSameAs(keys);
    assertThat(o.rank()).as("the pod's own balancing picked it").isEqualTo(-1);
    assertThat(o.errorBlocks(BS)).isZero();
  }

  @Test
  void new_badCounts_sayWhichIsWrong() {
    assertThatThrownBy(() -> new Observation("m", "p", 0, 10, 11))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cachedTokens");
    assertThatThrownBy(() -> new Observation("m", "p", -1, 10, 0))
        .hasMessageContaining("predictedBlocks");
    assertThatThrownBy(() -> new Observation("m", "p", 0, 0, 0))
        .hasMessageContaining("promptTokens");
    assertThatThrownBy(() -> new Observation("m", " ", 0, 1, 0)).hasMessageContaining("pod");
    assertThatThrownBy(() -> new Observation("m", "p", 0, 1, 0, null, -2))
        .hasMessageContaining("rank");
  }
}
