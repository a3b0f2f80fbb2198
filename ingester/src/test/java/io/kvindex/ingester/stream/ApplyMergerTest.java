package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyPlan;
import io.kvindex.index.KeyMode;
import io.kvindex.ingester.stream.Action.Apply;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** Which consecutive batches one apply call carries, and the merged batch it makes of them. */
class ApplyMergerTest {

  private static final long GIB = 1L << 30;

  private static Batch held(long seq, long bytes) {
    BlockStored stored = BlockStored.of(List.of(seq), null, List.of(), 16);
    KvEventBatch events = KvEventBatch.of(0, List.of(stored), null);
    return new Batch(seq, events.hashCode(), events, null, true, bytes);
  }

  @Test
  void apply_mergedBatchCountsEveryPartsBytesPastTwoGib() {
    // A stream may hold more than 2 GiB of decoded batches: max-pending-bytes and the memory
    // budget have no upper bound, and replayed history counts against the budget's other half.
    ApplyMerger merger = new ApplyMerger(KeyMode.ENGINE, 1_000);
    List<Batch> after = List.of(held(1, GIB), held(2, GIB));

    Apply apply = merger.apply(held(0, GIB), after, UnaryOperator.identity(), false);

    assertThat(apply.parts()).hasSize(3);
    assertThat(apply.batch().bytes()).isEqualTo(3 * GIB);
  }

  @Test
  void apply_stopsWhereTheBlocksNoLongerFit() {
    ApplyMerger merger = new ApplyMerger(KeyMode.ENGINE, 2);
    List<Batch> after = List.of(held(1, 10), held(2, 10));

    Apply apply = merger.apply(held(0, 10), after, UnaryOperator.identity(), false);

    assertThat(apply.parts()).extracting(Batch::seq).containsExactly(0L, 1L);
    assertThat(apply.batch().seq()).isEqualTo(1);
    assertThat(apply.batch().bytes()).isEqualTo(20);
  }

  @Test
  void apply_runCountsWhatItsMergedBatchWeighs_oneBatchAloneNothing() {
    ApplyMerger merger = new ApplyMerger(KeyMode.ENGINE, 3);
    List<Batch> after = List.of(held(1, 10), held(2, 10), held(3, 10));

    Apply run = merger.apply(held(0, 10), after, UnaryOperator.identity(), false);
    Apply alone = new ApplyMerger(KeyMode.ENGINE, 0).apply(held(0, 10), after, b -> b, false);

    assertThat(run.parts()).hasSize(3);
    assertThat(run.runBlocks())
        .isEqualTo(3)
        .isEqualTo(ApplyPlan.blocks(KeyMode.ENGINE, run.batch().events().events()));
    assertThat(alone.parts()).hasSize(1);
    assertThat(alone.runBlocks()).isZero();
  }
}
