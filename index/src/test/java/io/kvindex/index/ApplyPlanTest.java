package io.kvindex.index;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.BlockStored;
import io.kvindex.index.ApplyPlan.Chunk;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a call's events count, once, and where chunks of a given size cut them. */
class ApplyPlanTest {
  private static final int CHUNK = 16;

  /** A token-mode store of {@code n} blocks with all their tokens (block size 2). */
  private static BlockStored withTokens(long base, int n) {
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 2 * n; i++) {
      tokens.add(i);
    }
    return Events.stored(hashes(base, n), null, tokens, 2, null, null, null);
  }

  @Test
  void engineMode_aMixOfEvents_countsEachBlockOnceAndCutsEveryChunkFull() {
    ApplyPlan plan =
        ApplyPlan.of(
            KeyMode.ENGINE,
            3,
            5,
            batch(
                removed(hashes(1, 3), "GPU"),
                stored(hashes(100, 20), null, "GPU"),
                cleared(),
                stored(hashes(200, 10), 119L, "GPU")));

    assertThat(plan.firstSeq()).isEqualTo(3);
    assertThat(plan.seq()).isEqualTo(5);
    assertThat(plan.blocks()).isEqualTo(34);
    assertThat(plan.positions()).isEqualTo(34);
    assertThat(plan.dropped()).isZero();
    assertThat(plan.chunks(CHUNK))
        .containsExactly(new Chunk(0, 16), new Chunk(16, 32), new Chunk(32, 34));
  }

  @Test
  void chunks_aBatchExactlyAtTheLimit_isOneChunk_andOnePastItIsTwo() {
    ApplyPlan at =
        ApplyPlan.of(
            KeyMode.ENGINE,
            0,
            batch(removed(hashes(1, 6), "GPU"), stored(hashes(10, 10), null, "GPU")));
    ApplyPlan past =
        ApplyPlan.of(
            KeyMode.ENGINE,
            0,
            batch(removed(hashes(1, 6), "GPU"), stored(hashes(10, 10), null, "GPU"), cleared()));

    assertThat(at.blocks()).isEqualTo(CHUNK);
    assertThat(at.chunks(CHUNK)).containsExactly(new Chunk(0, 16));
    assertThat(past.blocks()).isEqualTo(CHUNK + 1);
    assertThat(past.chunks(CHUNK)).containsExactly(new Chunk(0, 16), new Chunk(16, 17));
  }

  @Test
  void tokenMode_storedBlocksWeighTwo_andAStoreWithoutItsTokensIsDropped() {
    ApplyPlan plan =
        ApplyPlan.of(
            KeyMode.TOKEN,
            0,
            batch(
                stored(hashes(1, 4), null, "GPU"), // no tokens: dropped, no position
                removed(hashes(1, 2), "GPU"),
                withTokens(100, 8)));

    assertThat(plan.dropped()).isEqualTo(4);
    assertThat(plan.positions()).isEqualTo(10);
    assertThat(plan.blocks()).isEqualTo(2 + 2 * 8);
    // 2 removed + 7 stored count 16; the 8th stored block starts the next chunk.
    assertThat(plan.chunks(CHUNK)).containsExactly(new Chunk(0, 9), new Chunk(9, 10));
  }

  @Test
  void tokenMode_aStoredBlockGivenTheLastUnitOfRoom_overshootsByOne() {
    ApplyPlan plan =
        ApplyPlan.of(KeyMode.TOKEN, 0, batch(removed(hashes(1, 1), "GPU"), withTokens(100, 10)));

    // 1 removed + 7 stored count 15: the 8th stored block still fits (17), the 9th starts anew.
    assertThat(plan.chunks(CHUNK)).containsExactly(new Chunk(0, 9), new Chunk(9, 11));
    assertThat(ApplyPlan.blocks(KeyMode.TOKEN, plan.batch().events())).isEqualTo(21);
  }

  @Test
  void chunks_fromAPositionInsideTheCall_areCutAsIfTheCallBeganThere() {
    ApplyPlan plan =
        ApplyPlan.of(
            KeyMode.ENGINE,
            0,
            batch(removed(hashes(1, 3), "GPU"), stored(hashes(10, 40), null, "GPU")));

    assertThat(plan.chunks(CHUNK, 20)).containsExactly(new Chunk(20, 36), new Chunk(36, 43));
    assertThat(plan.chunks(CHUNK, 2))
        .containsExactly(new Chunk(2, 18), new Chunk(18, 34), new Chunk(34, 43));
  }

  @Test
  void chunks_noBlocks_oneEmptyChunk() {
    ApplyPlan plan = ApplyPlan.of(KeyMode.TOKEN, 7, batch(stored(hashes(1, 2), null, "GPU")));

    assertThat(plan.blocks()).isZero();
    assertThat(plan.positions()).isZero();
    assertThat(plan.chunks(CHUNK)).containsExactly(new Chunk(0, 0));
    assertThat(ApplyPlan.of(KeyMode.ENGINE, 7, batch()).chunks(CHUNK))
        .containsExactly(new Chunk(0, 0));
  }

  /** A run of batches is checked against the plan's count, not counted again. */
  @Test
  void batchCheck_aRunOfBatchesPastOneChunk_refused_oneBatchPastItAccepted() {
    ApplyPlan run =
        ApplyPlan.of(KeyMode.ENGINE, 1, 2, batch(stored(hashes(1, CHUNK + 1), null, "GPU")));
    ApplyPlan one =
        ApplyPlan.of(KeyMode.ENGINE, 2, batch(stored(hashes(1, CHUNK + 1), null, "GPU")));

    assertThatThrownBy(() -> BatchCheck.check(run, CHUNK))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batches 1..2 applied as one count 17 blocks");
    BatchCheck.check(one, CHUNK);
    BatchCheck.check(
        ApplyPlan.of(KeyMode.ENGINE, 1, 2, batch(stored(hashes(1, CHUNK), null, "GPU"))), CHUNK);
  }
}
