package io.kvindex.router;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.PodMatch;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ScoreRankingTest {
  @ParameterizedTest
  @ValueSource(ints = {0, 1, 2, 7, 64, 65, 300})
  void sortByScore_highestFirst_equalScoresInTheirOrder(int n) {
    Random random = new Random(n);
    PodMatch[] ranked = new PodMatch[n];
    for (int i = 0; i < n; i++) {
      double score = 1 + random.nextInt(5); // few distinct scores: many ties
      ranked[i] = new PodMatch("pod-" + i, 1, 1, 1, score, Map.of());
    }
    List<PodMatch> expected = new ArrayList<>(List.of(ranked));
    expected.sort(Comparator.comparingDouble(PodMatch::score).reversed()); // stable

    Ranking.sortByScore(ranked, n);

    assertThat(ranked).containsExactlyElementsOf(expected);
  }

  @Test
  void sortByScore_sortsOnlyThePrefixItIsGiven() {
    PodMatch cold = PodMatch.none("cold");
    PodMatch low = new PodMatch("low", 1, 1, 1, 1.0, Map.of());
    PodMatch high = new PodMatch("high", 2, 2, 2, 2.0, Map.of());
    PodMatch[] ranked = {low, high, cold};

    Ranking.sortByScore(ranked, 2);

    assertThat(ranked).containsExactly(high, low, cold);
  }
}
