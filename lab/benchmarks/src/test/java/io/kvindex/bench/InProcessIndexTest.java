package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.StreamId;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class InProcessIndexTest {

  @Test
  void depths_matchTheLookupFixtureAfterGrowing() {
    LookupFixture fixture = LookupFixture.generate(5, 40, 32, 20_000);
    InProcessIndex index = new InProcessIndex(16);

    assertThat(index.store(fixture.feeds("m", 8))).isEqualTo(fixture.entries);

    for (int p = 0; p < fixture.prompts.size(); p++) {
      assertThat(index.depths(fixture.prompts.get(p), fixture.pods))
          .containsExactly(fixture.depths.get(p));
    }
  }

  @Test
  void depths_stopAtTheFirstBlockNoCandidateStillMatching() {
    long[] chain = {1, 2, 3, 4};
    InProcessIndex index = new InProcessIndex(16);
    index.store(List.of(feed("a", chain, 0, 2), feed("a", chain, 3, 4), feed("b", chain, 0, 4)));

    assertThat(index.depths(chain, List.of("a", "b", "c"))).containsExactly(2, 4, 0);
  }

  @Test
  void clear_removesThePodAndKeepsItsNeighbour() {
    long[] chain = LookupFixture.randomChain(new Random(1), 1_000);
    InProcessIndex index = new InProcessIndex(16);
    index.store(List.of(feed("a", chain, 0, 1_000), feed("b", chain, 0, 500)));
    int[] steps = new int[1];

    index.clear("a", () -> steps[0]++);

    assertThat(index.depths(chain, List.of("a", "b"))).containsExactly(0, 500);
    assertThat(index.blocks()).isEqualTo(500);
    assertThat(steps[0]).isEqualTo(1);
    assertThat(index.accountedBytes()).isPositive();
  }

  private static ApplyPump.Feed feed(String pod, long[] chain, int from, int to) {
    return new ApplyPump.Feed(
        StreamId.of("m", pod), new ChainFeed(List.of(new ChainFeed.Span(chain, from, to)), 3));
  }
}
