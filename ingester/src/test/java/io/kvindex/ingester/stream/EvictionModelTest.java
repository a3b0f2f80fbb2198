package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class EvictionModelTest {
  private static final long NO_LIMIT = Long.MAX_VALUE;

  private long seq;

  private static BlockStored stored(Long parent, Long... blocks) {
    return BlockStored.of(List.of(blocks), parent, List.of(), 16);
  }

  /** A store the model makes: no tokens (engine keys need none). */
  private static BlockStored restored(Long parent, Long... blocks) {
    return BlockStored.of(List.of(blocks), parent, List.of(), 0);
  }

  private static BlockStored storedIn(String tier, Long... blocks) {
    return new BlockStored(
        List.of(blocks), null, List.of(), 16, null, tier, null, null, null, null, null);
  }

  private Batch batch(KvEvent... events) {
    return Batch.of(seq++, KvEventBatch.of(1.0, List.of(events), 0));
  }

  /** What the model adds to a call of these batches, applied. */
  private static List<KvEvent> apply(EvictionModel model, Batch... parts) {
    List<KvEvent> added = added(model, NO_LIMIT, parts);
    model.applied();
    return added;
  }

  private static List<KvEvent> added(EvictionModel model, long room, Batch... parts) {
    List<KvEvent> own = new ArrayList<>();
    for (Batch b : parts) {
      own.addAll(b.events().events());
    }
    KvEventBatch merged = KvEventBatch.of(1.0, own, 0);
    List<KvEvent> all = model.eventsToApply(List.of(parts), merged, room).events();
    // The batches' own events first (those not held back), in order, then the model's.
    int k = 0;
    for (KvEvent e : own) {
      if (k < all.size() && all.get(k) == e) {
        k++;
      }
    }
    return all.subList(k, all.size());
  }

  private static List<Long> removedBlocks(List<KvEvent> events) {
    List<Long> out = new ArrayList<>();
    for (KvEvent e : events) {
      if (e instanceof BlockRemoved r) {
        out.addAll(r.blockHashes());
      }
    }
    return out;
  }

  @Test
  void store_pastCapacity_evictsTheLeastRecentlyUsed_aChainsTailFirst() {
    EvictionModel model = new EvictionModel(4);
    assertThat(apply(model, batch(stored(null, 1L, 2L, 3L)))).isEmpty();
    List<KvEvent> added = apply(model, batch(stored(null, 10L, 11L)));

    assertThat(added).containsExactly(new BlockRemoved(List.of(3L), "GPU", null));
    assertThat(model.held()).isEqualTo(4);
    assertThat(model.evicted()).isEqualTo(1);
    assertThat(removedBlocks(apply(model, batch(stored(11L, 12L))))).containsExactly(2L);
  }

  @Test
  void touch_movesThePromptToTheMostRecentEnd() {
    EvictionModel model = new EvictionModel(4);
    apply(model, batch(stored(null, 1L, 2L)), batch(stored(null, 5L, 6L)));
    model.touch(new long[] {1, 2}, true, 0);

    assertThat(removedBlocks(apply(model, batch(stored(null, 7L, 8L))))).containsExactly(6L, 5L);
    assertThat(model.holds(1)).isTrue();
    assertThat(model.holds(2)).isTrue();
    assertThat(model.restored()).isZero();
  }

  @Test
  void touch_restoresWhatTheModelDropped_parentFirst_onlyOnItsRank() {
    EvictionModel model = new EvictionModel(3);
    apply(model, batch(stored(null, 1L, 2L, 3L)));
    apply(model, batch(stored(null, 7L, 8L)));
    assertThat(model.holds(3)).isFalse();
    assertThat(model.holds(2)).isFalse();

    model.touch(new long[] {1, 2, 3}, false, 0);
    assertThat(model.holds(2)).as("another rank's request restores nothing").isFalse();
    model.touch(new long[] {1, 2, 3}, true, 0);

    List<KvEvent> added = apply(model, batch());
    assertThat(added)
        .containsExactly(restored(1L, 2L, 3L), new BlockRemoved(List.of(8L, 7L), "GPU", null));
    assertThat(model.restored()).isEqualTo(2);
    assertThat(apply(model, batch())).as("sent once").isEmpty();
  }

  @Test
  void changes_stayPendingUntilACallCarryingThemApplied() {
    EvictionModel model = new EvictionModel(2);
    Batch first = batch(stored(null, 1L, 2L, 3L));
    List<KvEvent> tried = added(model, NO_LIMIT, first);
    List<KvEvent> retried = added(model, NO_LIMIT, first);
    Batch next = batch();
    List<KvEvent> withTheNext = added(model, NO_LIMIT, first, next);
    model.applied();

    assertThat(tried).containsExactly(new BlockRemoved(List.of(3L), "GPU", null));
    assertThat(retried).as("a retry carries them again, the batch taken in once").isEqualTo(tried);
    assertThat(withTheNext).isEqualTo(tried);
    assertThat(model.evicted()).isEqualTo(1);
    assertThat(apply(model, batch())).isEmpty();
  }

  @Test
  void changes_atMostTheRoomLeft_theRestInTheNextCall() {
    EvictionModel model = new EvictionModel(1);
    apply(model, batch(stored(null, 1L)));
    assertThat(removedBlocks(added(model, 2, batch(stored(null, 2L, 3L, 4L)))))
        .as("in eviction order")
        .containsExactly(1L, 4L);
    model.applied();
    assertThat(removedBlocks(added(model, 0, batch()))).isEmpty();
    model.applied();
    assertThat(removedBlocks(apply(model, batch()))).containsExactly(3L);
  }

  @Test
  void enginesOwnEvents_overridePendingChanges() {
    EvictionModel model = new EvictionModel(2);
    assertThat(removedBlocks(added(model, NO_LIMIT, batch(stored(null, 1L, 2L, 3L)))))
        .containsExactly(3L);
    // not applied: the engine stores 3 again before the removal went out
    assertThat(added(model, NO_LIMIT, batch(stored(2L, 3L))))
        .as("3 stored again; 2, now the least recent, evicted")
        .containsExactly(new BlockRemoved(List.of(2L), "GPU", null));
    model.applied();

    model.touch(new long[] {9, 10}, true, 0); // restores 9 and 10, evicting 1 and 3
    assertThat(added(model, NO_LIMIT, batch(new BlockRemoved(List.of(9L), "GPU", null))))
        .as("the engine removed 9: no restore of 9, nor of 10 chained after it")
        .containsExactly(new BlockRemoved(List.of(1L, 3L), "GPU", null));
    assertThat(model.holds(10)).isFalse();
  }

  @Test
  void allBlocksCleared_dropsTheModelAndItsPendingChanges() {
    EvictionModel model = new EvictionModel(2);
    added(model, NO_LIMIT, batch(stored(null, 1L, 2L, 3L)));
    assertThat(added(model, NO_LIMIT, batch(AllBlocksCleared.INSTANCE, stored(null, 5L))))
        .isEmpty();
    assertThat(model.held()).isEqualTo(1);
  }

  @Test
  void clear_startsAgainFromNothing_andTakesInAReplayedSequenceAgain() {
    EvictionModel model = new EvictionModel(2);
    Batch b = batch(stored(null, 1L, 2L));
    apply(model, b);
    model.clear();
    assertThat(model.held()).isZero();
    apply(model, b);
    assertThat(model.held()).as("the replayed batch taken in again").isEqualTo(2);
  }

  @Test
  void otherTiersAndGroups_passThroughUnmodelled() {
    EvictionModel model = new EvictionModel(1);
    BlockStored cpu = storedIn("CPU", 1L, 2L, 3L);
    BlockStored otherGroup =
        new BlockStored(
            List.of(4L, 5L), null, List.of(), 16, null, null, null, null, 1, null, null);
    assertThat(apply(model, batch(cpu, otherGroup))).isEmpty();
    assertThat(model.held()).isZero();
  }

  @Test
  void touch_predictionErrors_moveTheSizeWithinItsBounds() {
    EvictionModel model = new EvictionModel(128);
    model.touch(new long[] {}, false, 5);
    assertThat(model.size()).as("another rank's request").isEqualTo(128);
    model.touch(new long[] {}, true, -5);
    assertThat(model.size()).as("never above the engine's capacity").isEqualTo(128);
    model.touch(new long[] {}, true, 1);
    assertThat(model.size()).isEqualTo(127);
    model.touch(new long[] {}, true, 1000);
    assertThat(model.size()).as("at most capacity / 16 a touch").isEqualTo(119);
    for (int i = 0; i < 100; i++) {
      model.touch(new long[] {}, true, 1000);
    }
    assertThat(model.size()).as("never below capacity / 16").isEqualTo(8);
    model.touch(new long[] {}, true, -3);
    assertThat(model.size()).isEqualTo(11);
  }

  @Test
  void touch_overPredicted_shrinksAndEvicts() {
    EvictionModel model = new EvictionModel(64);
    apply(model, batch(stored(null, 1L, 2L, 3L, 4L, 5L, 6L)));
    for (int i = 0; i < 60; i++) {
      model.touch(new long[] {1, 2}, true, 1);
    }
    assertThat(model.size()).isEqualTo(4);
    assertThat(removedBlocks(apply(model, batch()))).containsExactly(6L, 5L);
  }

  @Test
  void prime_learnsTheOrderFromTheRing_removingNothingItDropped() {
    EvictionModel model = new EvictionModel(3);
    Batch old = batch(stored(null, 1L, 2L));
    Batch mid = batch(stored(null, 3L, 4L));
    Batch applied = batch(stored(null, 5L));
    Batch pending = batch(stored(null, 6L));
    model.prime(List.of(old, mid, applied, pending), applied.seq());

    assertThat(model.holds(1)).isFalse();
    assertThat(model.holds(5)).isTrue();
    assertThat(model.holds(6)).as("past the watermark: applied later").isFalse();
    assertThat(added(model, NO_LIMIT, applied)).as("taken in already; nothing removed").isEmpty();
    assertThat(removedBlocks(apply(model, pending))).containsExactly(4L);
  }

  @Test
  void store_underAParentTheIndexDoesNotList_heldBackUntilATouchPlacesItsChain() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L, 2L)));
    BlockStored orphan = stored(4L, 5L);
    Batch b = batch(orphan);

    assertThat(added(model, NO_LIMIT, b)).isEmpty();
    KvEventBatch call = model.eventsToApply(List.of(b), b.events(), NO_LIMIT);
    assertThat(call.events()).as("held back, a retry too").doesNotContain(orphan);
    model.applied();
    assertThat(model.holds(5)).isTrue();
    assertThat(model.listed(5)).isFalse();

    model.touch(new long[] {1, 2, 4, 5}, true, 0);
    assertThat(apply(model, batch())).containsExactly(restored(2L, 4L, 5L));
    assertThat(model.listed(5)).isTrue();
  }

  @Test
  void store_heldBack_followsItsParentOnceTheEngineStoresIt() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L, 2L)));
    apply(model, batch(stored(6L, 7L)));
    BlockStored parent = stored(2L, 6L);

    List<KvEvent> call = new ArrayList<>(added(model, NO_LIMIT, batch(parent)));
    model.applied();
    assertThat(call).containsExactly(restored(6L, 7L));
    assertThat(model.listed(7)).isTrue();
  }

  @Test
  void store_heldBack_evictedBeforeItsParentCame_removesNothing() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(9L, 1L)));
    assertThat(apply(model, batch(stored(null, 2L, 3L)))).as("1 was never listed").isEmpty();
    assertThat(model.holds(1)).isFalse();
  }

  /**
   * A restore goes after the call's own events, so the engine's store under a block the model
   * restored but has not sent yet is held back, and follows its parent's restore instead.
   */
  @Test
  void store_underARestoreNotSentYet_heldBackThenFollowsIt() {
    EvictionModel model = new EvictionModel(3);
    apply(model, batch(stored(null, 1L, 2L, 3L)));
    apply(model, batch(stored(null, 7L, 8L, 9L)));
    assertThat(model.listed(1)).isFalse();
    model.touch(new long[] {1, 2}, true, 0);
    BlockStored child = stored(2L, 5L);
    Batch b = batch(child);

    List<KvEvent> added = added(model, NO_LIMIT, b);
    assertThat(model.eventsToApply(List.of(b), b.events(), NO_LIMIT).events())
        .doesNotContain(child);
    model.applied();
    assertThat(added).startsWith(restored(null, 1L, 2L, 5L));
    assertThat(model.listed(5)).isTrue();
  }

  /** Evicting a restore not sent yet drops the restores chained after it, whatever their age. */
  @Test
  void evict_aPendingRestore_dropsTheRestoresChainedAfterIt() {
    EvictionModel model = new EvictionModel(3);
    model.touch(new long[] {1, 2}, true, 0);
    model.touch(new long[] {5, 2}, true, 0); // 2 used again, more recently than 1
    assertThat(apply(model, batch(stored(null, 7L, 8L, 9L))))
        .as("none of the restores had gone out")
        .isEmpty();
    assertThat(model.holds(1)).isFalse();
    assertThat(model.holds(2)).as("no place in the chain without 1").isFalse();
    assertThat(model.holds(5)).isFalse();
    assertThat(model.listed(7) && model.listed(8) && model.listed(9)).isTrue();
  }

  @Test
  void capacity_atLeastOne() {
    assertThatThrownBy(() -> new EvictionModel(0)).hasMessageContaining("capacity");
  }
}
