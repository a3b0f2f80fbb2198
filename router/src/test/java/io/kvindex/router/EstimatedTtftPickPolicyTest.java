package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.PodMatch;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class EstimatedTtftPickPolicyTest {
  private static final List<String> PODS = List.of("a", "b", "c");
  private static final int BLOCK = 16;

  /** 5 ms a step, 40 µs a token, 8 192 tokens a step, 256 tokens per unit of load. */
  private final PickPolicy policy = PickPolicy.estimatedTtft(16, 1.5, TtftCostModel.DEFAULT);

  /** A prompt of {@code blocks} full blocks; each pod holding the given prefix, in blocks. */
  private static Scores prompt(int blocks, int a, int b, int c) {
    List<PodMatch> held = new java.util.ArrayList<>();
    int[] depths = {a, b, c};
    for (int i = 0; i < 3; i++) {
      if (depths[i] > 0) {
        int d = depths[i];
        held.add(new PodMatch(PODS.get(i), d, d, d, d, Map.of(0, d), false));
      }
    }
    return new Scores(
        "m",
        BLOCK,
        new long[blocks],
        1,
        held,
        held.isEmpty() ? Scores.Outcome.MISS : Scores.Outcome.HIT);
  }

  /** Loads in requests and, when not NaN, the queued prompt tokens the gateway knows of. */
  private static LoadSignal signal(double[] load, double[] queued) {
    Map<String, Double> l = new HashMap<>();
    Map<String, Double> q = new HashMap<>();
    for (int i = 0; i < 3; i++) {
      l.put(PODS.get(i), load[i]);
      q.put(PODS.get(i), queued[i]);
    }
    return new LoadSignal() {
      @Override
      public double load(String pod) {
        return l.get(pod);
      }

      @Override
      public double queuedTokens(String pod) {
        return q.get(pod);
      }
    };
  }

  private static double[] d(double... v) {
    return v;
  }

  private static final double[] UNKNOWN = {Double.NaN, Double.NaN, Double.NaN};

  static Stream<Arguments> table() {
    // prompt blocks, held a/b/c, load a/b/c, queued tokens a/b/c, pod, reason
    return Stream.of(
        Arguments.of(
            "idle fleet: the longest prefix is fastest",
            750,
            d(700, 0, 100),
            d(0, 0, 0),
            UNKNOWN,
            "a",
            Pick.Reason.LONGEST_PREFIX),
        Arguments.of(
            "warm pod with a short queue still wins: 11 200 tokens saved, 4 096 queued",
            750,
            d(700, 0, 0),
            d(1, 0, 0),
            d(4096, 0, 0),
            "a",
            Pick.Reason.LONGEST_PREFIX),
        Arguments.of(
            "warm pod behind two long prompts loses to the idle cold pod",
            750,
            d(700, 0, 0),
            d(2, 0, 1),
            d(24_000, 0, 12_000),
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "the second-warmest idle pod beats the warmest queued one",
            750,
            d(700, 600, 0),
            d(2, 0, 0),
            d(12_000, 0, 0),
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "queued tokens unknown: load times 256 tokens; 6 requests outweigh 50 blocks",
            750,
            d(100, 50, 0),
            d(6, 0, 0),
            UNKNOWN,
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "queued tokens unknown: 1 request does not outweigh 50 blocks",
            750,
            d(100, 50, 0),
            d(1, 0, 0),
            UNKNOWN,
            "a",
            Pick.Reason.LONGEST_PREFIX),
        Arguments.of(
            "a miss everywhere: the least queued work",
            750,
            d(0, 0, 0),
            d(1, 1, 1),
            d(900, 300, 600),
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "equal estimates: the standard ordering (least load) decides",
            750,
            d(0, 0, 0),
            d(3, 1, 2),
            d(0, 0, 0),
            "b",
            Pick.Reason.LEAST_LOAD),
        Arguments.of(
            "the overload guard leaves out the warm idle-looking pod 17 requests above the least",
            750,
            d(700, 0, 0),
            d(17, 0, 0),
            d(0, 0, 100),
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "short prompt: a queue of 1 000 tokens outweighs 304 cached tokens",
            20,
            d(19, 0, 0),
            d(1, 0, 1),
            d(1000, 0, 100),
            "b",
            Pick.Reason.ESTIMATED_TTFT),
        Arguments.of(
            "short prompt: a queue of 200 tokens does not",
            20,
            d(19, 0, 0),
            d(1, 0, 0),
            d(200, 0, 0),
            "a",
            Pick.Reason.LONGEST_PREFIX));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void pick_table(
      String why,
      int blocks,
      double[] held,
      double[] load,
      double[] queued,
      String pod,
      Pick.Reason reason) {
    Scores s = prompt(blocks, (int) held[0], (int) held[1], (int) held[2]);
    Pick pick = policy.pick(s, PODS, signal(load, queued));
    assertThat(pick.pod()).as(why).isEqualTo(pod);
    assertThat(pick.reason()).as(why).isEqualTo(reason);
    assertThat(policy.verdicts(s, PODS, signal(load, queued)).get(pod))
        .as(why)
        .isEqualTo(Pick.Verdict.CHOSEN);
  }

  @Test
  void verdicts_sayWhichStepLeftEachOut() {
    Scores s = prompt(750, 700, 600, 0);
    LoadSignal l = signal(d(2, 0, 20), d(12_000, 0, 0));
    assertThat(policy.verdicts(s, PODS, l))
        .containsExactly(
            Map.entry("a", Pick.Verdict.SLOWER_ESTIMATE),
            Map.entry("b", Pick.Verdict.CHOSEN),
            Map.entry("c", Pick.Verdict.OVERLOADED));
  }

  @Test
  void pick_matchedBlocksAreTheChosenPods() {
    Pick pick = policy.pick(prompt(750, 700, 600, 0), PODS, signal(d(2, 0, 0), d(12_000, 0, 0)));
    assertThat(pick.matchedBlocks()).isEqualTo(600);
  }

  @Test
  void pick_indexUnavailable_leastLoad() {
    Scores down = Scores.unavailable("m", BLOCK, new long[8]);
    Pick pick = policy.pick(down, PODS, signal(d(2, 1, 3), UNKNOWN));
    assertThat(pick.pod()).isEqualTo("b");
    assertThat(pick.reason()).isEqualTo(Pick.Reason.INDEX_UNAVAILABLE);
  }

  @Test
  void pick_samePromptAndLoads_samePodWhateverTheCandidateOrder() {
    Scores s = prompt(40, 10, 10, 10);
    LoadSignal l = signal(d(0, 0, 0), d(0, 0, 0));
    Pick first = policy.pick(s, PODS, l);
    assertThat(policy.pick(s, List.of("c", "b", "a"), l)).isEqualTo(first);
    assertThat(first.reason()).isEqualTo(Pick.Reason.TIE_BREAK);
  }

  @Test
  void costModel_stepsOfAtMostTheBatchTokens() {
    TtftCostModel m = TtftCostModel.DEFAULT;
    assertThat(m.seconds(0, 0)).isEqualTo(0.005);
    assertThat(m.seconds(0, 8192))
        .isCloseTo(0.005 + 8192 * 40e-6, org.assertj.core.data.Offset.offset(1e-12));
    assertThat(m.seconds(4096, 4097))
        .isCloseTo(0.010 + 8193 * 40e-6, org.assertj.core.data.Offset.offset(1e-12));
  }

  @Test
  void costModel_parsesWhatItWrites() {
    assertThat(TtftCostModel.DEFAULT.toString()).isEqualTo("0.005,4.0E-5,8192,256");
    assertThat(TtftCostModel.parse(TtftCostModel.DEFAULT.toString()))
        .isEqualTo(TtftCostModel.DEFAULT);
    assertThatThrownBy(() -> TtftCostModel.parse("0.005,40e-6"))
        .hasMessageContaining("STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD");
    assertThatThrownBy(() -> PickPolicy.named("fastest", 16, 1.5, TtftCostModel.DEFAULT))
        .hasMessageContaining("estimated-ttft")
        .hasMessageContaining("longest-prefix");
  }

  @Test
  void costModel_badParameters_sayWhich() {
    assertThatThrownBy(() -> new TtftCostModel(0.005, 0, 8192, 256))
        .hasMessageContaining("tokenSeconds");
    assertThatThrownBy(() -> new TtftCostModel(0.005, 40e-6, 0, 256))
        .hasMessageContaining("batchTokens");
    assertThatThrownBy(() -> new TtftCostModel(-1, 40e-6, 8192, 256))
        .hasMessageContaining("stepSeconds");
    assertThatThrownBy(() -> PickPolicy.estimatedTtft(16, 1.5, null)).hasMessageContaining("cost");
  }
}
