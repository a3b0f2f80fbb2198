package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class StandardPickPolicyTest {
  private static final List<String> PODS = List.of("a", "b", "c");
  private final PickPolicy policy = PickPolicy.standard(4, 1.5);

  private static PodMatch score(String pod, int blocks) {
    return new PodMatch(pod, blocks, blocks, blocks, blocks, Map.of(), false);
  }

  private static Scores scores(long affinity, PodMatch... pods) {
    return new Scores("m", 16, new long[8], affinity, List.of(pods), Scores.Outcome.HIT);
  }

  private static LoadSignal loads(double a, double b, double c) {
    Map<String, Double> m = Map.of("a", a, "b", b, "c", c);
    return m::get;
  }

  @Test
  void verdicts_eachCandidateSaysWhichStepLeftItOut() {
    List<String> pods = List.of("a", "b", "c", "d");
    Scores s = scores(1, score("a", 5), score("b", 3), score("c", 3), score("d", 1));
    Map<String, Double> load = Map.of("a", 20.0, "b", 2.0, "c", 1.0, "d", 0.0);

    Map<String, Pick.Verdict> verdicts = policy.verdicts(s, pods, load::get);

    assertThat(verdicts)
        .containsExactly(
            Map.entry("a", Pick.Verdict.OVERLOADED),
            Map.entry("b", Pick.Verdict.MORE_LOAD),
            Map.entry("c", Pick.Verdict.CHOSEN),
            Map.entry("d", Pick.Verdict.SHORTER_PREFIX));
    assertThat(policy.pick(s, pods, load::get).pod()).isEqualTo("c");
  }

  @Test
  void verdicts_tieBrokenAndIndexUnavailable_agreeWithPick() {
    Scores tied = scores(7, score("a", 2), score("b", 2), score("c", 2));
    Pick pick = policy.pick(tied, PODS, loads(0, 0, 0));
    Map<String, Pick.Verdict> verdicts = policy.verdicts(tied, PODS, loads(0, 0, 0));
    assertThat(verdicts.get(pick.pod())).isEqualTo(Pick.Verdict.CHOSEN);
    assertThat(verdicts.values())
        .containsOnly(Pick.Verdict.CHOSEN, Pick.Verdict.LOST_TIE_BREAK)
        .hasSize(3);

    Scores down = Scores.unavailable("m", 16, new long[8]);
    assertThat(policy.verdicts(down, PODS, loads(1, 0, 2)))
        .containsExactly(
            Map.entry("a", Pick.Verdict.MORE_LOAD),
            Map.entry("b", Pick.Verdict.CHOSEN),
            Map.entry("c", Pick.Verdict.MORE_LOAD));
  }

  @Test
  void verdicts_policyThatDoesNotExplain_namesOnlyTheChosen() {
    PickPolicy first =
        (s, pods, load) -> new Pick(pods.iterator().next(), Pick.Reason.TIE_BREAK, 0, false);
    assertThat(first.verdicts(scores(1), PODS, loads(0, 0, 0)))
        .containsExactly(
            Map.entry("a", Pick.Verdict.CHOSEN),
            Map.entry("b", Pick.Verdict.NOT_CHOSEN),
            Map.entry("c", Pick.Verdict.NOT_CHOSEN));
  }

  @Test
  void pick_longestPrefixWins() {
    Pick pick =
        policy.pick(scores(1, score("a", 1), score("b", 5), score("c", 2)), PODS, loads(0, 3, 0));
    assertThat(pick.pod()).isEqualTo("b");
    assertThat(pick.reason()).isEqualTo(Pick.Reason.LONGEST_PREFIX);
    assertThat(pick.matchedBlocks()).isEqualTo(5);
  }

  @Test
  void pick_overloadedPodLosesItsPrefix() {
    Pick pick =
        policy.pick(scores(1, score("a", 1), score("b", 5), score("c", 2)), PODS, loads(2, 9, 3));
    assertThat(pick.pod()).isEqualTo("c");
    assertThat(pick.reason()).isEqualTo(Pick.Reason.LONGEST_PREFIX);
  }

  @Test
  void pick_guardNeedsBothAbsoluteAndRatio() {
    // 30 > 24 + 4 but 30 < 24 * 1.5: not overloaded, so the prefix decides.
    Pick pick =
        policy.pick(
            scores(1, score("a", 0), score("b", 5), score("c", 0)), PODS, loads(24, 30, 24));
    assertThat(pick.pod()).isEqualTo("b");
  }

  @Test
  void pick_equalPrefixGoesToLeastLoaded() {
    Pick pick =
        policy.pick(scores(1, score("a", 3), score("b", 3), score("c", 1)), PODS, loads(2, 1, 0));
    assertThat(pick.pod()).isEqualTo("b");
    assertThat(pick.reason()).isEqualTo(Pick.Reason.LEAST_LOAD);
  }

  @Test
  void pick_podsMissingFromScoresCountAsMisses() {
    Pick pick = policy.pick(scores(1, score("a", 2)), PODS, loads(1, 0, 0));
    assertThat(pick.pod()).isEqualTo("a");
    Pick cold = policy.pick(scores(1), PODS, loads(1, 0, 1));
    assertThat(cold.pod()).isEqualTo("b");
    assertThat(cold.reason()).isEqualTo(Pick.Reason.LEAST_LOAD);
  }

  @Test
  void pick_tieBreakIsDeterministicAndSpreadsPrefixes() {
    Set<String> chosen = new java.util.HashSet<>();
    for (long affinity = 0; affinity < 64; affinity++) {
      Scores s = scores(affinity * 0x9E3779B97F4A7C15L);
      Pick first = policy.pick(s, PODS, LoadSignal.none());
      List<String> reversed = new ArrayList<>(PODS);
      java.util.Collections.reverse(reversed);
      Pick again = policy.pick(s, reversed, LoadSignal.none());
      assertThat(again).isEqualTo(first);
      assertThat(first.reason()).isEqualTo(Pick.Reason.TIE_BREAK);
      chosen.add(first.pod());
    }
    assertThat(chosen).containsExactlyInAnyOrder("a", "b", "c");
  }

  @Test
  void pick_tieOnASharedFirstBlockSpreadsByWhatFollowsIt() {
    // Every prompt starts with the same block (a system prompt) and every pod holds just that
    // block: the cache decides nothing, so the prompts must not all go to one pod.
    Set<String> chosen = new java.util.HashSet<>();
    for (long i = 0; i < 64; i++) {
      long[] keys = {42, i * 0x9E3779B97F4A7C15L + 1, 5, 6};
      Scores s =
          new Scores(
              "m",
              16,
              keys,
              42,
              List.of(score("a", 1), score("b", 1), score("c", 1)),
              Scores.Outcome.HIT);
      Pick first = policy.pick(s, PODS, LoadSignal.none());
      assertThat(first.reason()).isEqualTo(Pick.Reason.TIE_BREAK);
      assertThat(policy.pick(s, List.of("c", "b", "a"), LoadSignal.none())).isEqualTo(first);
      chosen.add(first.pod());
    }
    assertThat(chosen).containsExactlyInAnyOrder("a", "b", "c");
  }

  @Test
  void pick_indexUnavailableFallsBackToLeastLoad() {
    long[] keys = new long[8];
    keys[0] = 7;
    Scores unavailable = Scores.unavailable("m", 16, keys);
    Pick pick = policy.pick(unavailable, PODS, loads(3, 2, 5));
    assertThat(pick.pod()).isEqualTo("b");
    assertThat(pick.reason()).isEqualTo(Pick.Reason.INDEX_UNAVAILABLE);
    assertThat(pick.matchedBlocks()).isZero();
  }

  @Test
  void pick_tierWeightedScoreBeatsRawDepth() {
    PodMatch onCpu = new PodMatch("a", 6, 0, 6, 3.0, Map.of(), false);
    PodMatch onGpu = new PodMatch("b", 4, 4, 4, 4.0, Map.of(), false);
    Pick pick = policy.pick(scores(1, onCpu, onGpu), List.of("a", "b"), LoadSignal.none());
    assertThat(pick.pod()).isEqualTo("b");
  }

  @Test
  void pick_badCandidates() {
    assertThatThrownBy(() -> policy.pick(scores(1), List.of(), LoadSignal.none()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("candidates must not be empty");
    assertThatThrownBy(() -> policy.pick(scores(1), List.of("a", "a"), LoadSignal.none()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("repeat");
    assertThatThrownBy(() -> PickPolicy.standard(-1, 1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("imbalanceAbsolute");
  }

  @Test
  void pick_speculativeFlagTravels() {
    PodMatch spec = new PodMatch("a", 3, 3, 3, 3, Map.of(), true);
    Pick pick = policy.pick(scores(1, spec), List.of("a", "b"), LoadSignal.none());
    assertThat(pick.speculative()).isTrue();
  }
}
