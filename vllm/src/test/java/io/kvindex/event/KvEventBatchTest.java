package io.kvindex.event;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class KvEventBatchTest {
  @Test
  void concat_eventsInOrder_theLastBatchsTimestampAndRank() {
    KvEventBatch first = KvEventBatch.of(1.0, List.of(AllBlocksCleared.INSTANCE), 0);
    BlockRemoved removed = new BlockRemoved(List.of(7L), null, null);
    KvEventBatch second = KvEventBatch.of(2.0, List.of(removed), 3);

    KvEventBatch both = KvEventBatch.concat(List.of(first, second));

    assertThat(both.events()).containsExactly(AllBlocksCleared.INSTANCE, removed);
    assertThat(both.timestamp()).isEqualTo(2.0);
    assertThat(both.dataParallelRank()).isEqualTo(3);
    assertThat(KvEventBatch.concat(List.of(first))).isSameAs(first);
    assertThatThrownBy(() -> KvEventBatch.concat(List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
