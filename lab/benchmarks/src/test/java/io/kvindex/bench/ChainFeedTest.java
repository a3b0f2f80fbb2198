package io.kvindex.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ChainFeedTest {

  @Test
  void next_splitsSpansIntoParentLinkedBatches() {
    long[] chain = {10, 11, 12, 13, 14};
    ChainFeed feed =
        new ChainFeed(List.of(ChainFeed.Span.prefix(chain, 5), new ChainFeed.Span(chain, 3, 5)), 2);
    List<BlockStored> stored = new ArrayList<>();
    feed.forEachRemaining((KvEventBatch batch) -> stored.add((BlockStored) batch.events().get(0)));

    assertThat(stored)
        .extracting(s -> (List<Long>) s.blockHashes())
        .containsExactly(List.of(10L, 11L), List.of(12L, 13L), List.of(14L), List.of(13L, 14L));
    assertThat(stored)
        .extracting(BlockStored::parentBlockHash)
        .containsExactly(null, 11L, 13L, 12L);
  }

  @Test
  void hasNext_emptySpansSkipped() {
    ChainFeed feed = new ChainFeed(List.of(ChainFeed.Span.prefix(new long[] {1}, 0)), 4);
    assertThat(feed.hasNext()).isFalse();
  }

  @Test
  void generate_lookupFixtureEntriesMatchDepths() {
    LookupFixture fixture = LookupFixture.generate(1, 64, 16, 2_000);
    long sum = 0;
    for (int[] depths : fixture.depths) {
      int full = 0;
      for (int depth : depths) {
        sum += depth;
        full += depth == 16 ? 1 : 0;
      }
      assertThat(full).isGreaterThanOrEqualTo(LookupFixture.FULL_PODS);
    }
    assertThat(fixture.entries).isEqualTo(sum).isGreaterThanOrEqualTo(2_000);
  }
}
