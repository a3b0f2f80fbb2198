package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.Touch;
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

  private static BlockRemoved removal(Long... blocks) {
    return new BlockRemoved(List.of(blocks), "GPU", null);
  }

  private Batch batch(KvEvent... events) {
    return Batches.live(seq++, KvEventBatch.of(1.0, List.of(events), 0));
  }

  /** What the model adds to a call of these batches, the call applied. */
  private static List<KvEvent> apply(EvictionModel model, Batch... parts) {
    List<KvEvent> added = added(model, NO_LIMIT, parts);
    model.applied(parts[parts.length - 1].seq());
    return added;
  }

  /** What the model adds to a call of these batches (after their own events, in order). */
  private static List<KvEvent> added(EvictionModel model, long room, Batch... parts) {
    List<KvEvent> all = call(model, room, parts);
    int k = 0;
    for (Batch b : parts) {
      for (KvEvent e : b.events().events()) {
        if (k < all.size() && all.get(k) == e) {
          k++;
        }
      }
    }
    return all.subList(k, all.size());
  }

  private static List<KvEvent> call(EvictionModel model, long room, Batch... parts) {
    return model.eventsToApply(List.of(parts), room).events();
  }

  /** When touches are recorded: after every batch of these tests (their batches' time is 1 s). */
  private static final long LATER = 10_000;

  /** A touch that reports the whole prompt cached. */
  private static Touch seen(int rank, long[] blocks, int errorBlocks) {
    return new Touch(rank, blocks, errorBlocks, blocks.length, LATER);
  }

  private static void touch(EvictionModel model, int errorBlocks, long... blocks) {
    model.touched(List.of(seen(0, blocks, errorBlocks)), 0, false);
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

    assertThat(added).containsExactly(removal(3L));
    assertThat(model.held()).isEqualTo(4);
    assertThat(model.evicted()).isEqualTo(1);
    assertThat(removedBlocks(apply(model, batch(stored(11L, 12L))))).containsExactly(2L);
  }

  @Test
  void store_makesItsParentRecent() {
    EvictionModel model = new EvictionModel(4);
    apply(model, batch(stored(null, 1L, 2L)));
    apply(model, batch(stored(null, 5L, 6L)));
    assertThat(removedBlocks(apply(model, batch(stored(2L, 3L)))))
        .as("2 was the least recent, but the engine just used it as a parent")
        .containsExactly(1L);
    assertThat(model.listed(2)).isTrue();
  }

  @Test
  void touch_movesThePromptToTheMostRecentEnd() {
    EvictionModel model = new EvictionModel(4);
    apply(model, batch(stored(null, 1L, 2L)), batch(stored(null, 5L, 6L)));
    touch(model, 0, 1, 2);

    assertThat(removedBlocks(apply(model, batch(stored(null, 7L, 8L))))).containsExactly(6L, 5L);
    assertThat(model.holds(1)).isTrue();
    assertThat(model.holds(2)).isTrue();
    assertThat(model.restored()).isZero();
  }

  @Test
  void touch_restoresWhatTheIndexLost_parentFirst_onlyOnTheCreditedRank() {
    EvictionModel model = new EvictionModel(3);
    apply(model, batch(stored(null, 1L, 2L, 3L)));
    apply(model, batch(stored(null, 7L, 8L)));
    assertThat(model.listed(2)).isFalse();

    model.touched(List.of(seen(1, new long[] {1, 2, 3}, 0)), 0, true);
    assertThat(model.listed(2)).as("another rank's request restores nothing").isFalse();
    model.touched(List.of(seen(-1, new long[] {1, 2, 3}, 0)), 0, false);
    assertThat(model.listed(2)).as("an unknown rank, the pod having several").isFalse();
    model.touched(List.of(seen(-1, new long[] {1, 2, 3}, 0)), 0, true);

    assertThat(apply(model, batch())).containsExactly(restored(1L, 2L, 3L), removal(8L, 7L));
    assertThat(model.restored()).isEqualTo(2);
    assertThat(apply(model, batch())).as("sent once").isEmpty();
  }

  /** A block evicted whose removal has not gone out is still in the index: a touch keeps it. */
  @Test
  void touch_ofABlockWhoseRemovalWaits_keepsItWithoutStoringIt() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 1L, 2L)));
    model.touched(List.of(), 0, true);
    touch(model, 0, 9);
    // 9 evicted 2; the removal of 2 has not gone out yet
    touch(model, 0, 1, 2);

    List<KvEvent> added = apply(model, batch());
    assertThat(added).as("9 is pending, then evicted again before it went out").isEmpty();
    assertThat(model.listed(2)).isTrue();
  }

  /**
   * A touch between a call that carries a removal and its retry cannot take the removal back: the
   * block is stored again in the call after.
   */
  @Test
  void touch_ofABlockWhoseRemovalIsInAnUnsettledCall_storesItAgainAfter() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 1L, 2L)));
    Batch b = batch(stored(null, 5L));
    List<KvEvent> first = added(model, NO_LIMIT, b); // not applied: a temporary error
    assertThat(first).containsExactly(removal(2L));
    touch(model, 0, 1, 2);

    assertThat(added(model, NO_LIMIT, b))
        .as("the retry carries what the call did")
        .isEqualTo(first);
    model.applied(b.seq());
    assertThat(apply(model, batch())).startsWith(restored(1L, 2L));
  }

  /**
   * A retry that runs on to more batches (the first ones may have applied meanwhile) holds back the
   * same events, and after a DUPLICATE the batch not applied still holds its store back.
   */
  @Test
  void heldBack_survivesARetryAndADuplicate_byItsBatchAndPosition() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L)));
    model.touched(List.of(), 0, true);
    apply(model, batch(removal(1L)));
    Batch five = batch(stored(null, 20L));
    Batch six = batch(stored(1L, 21L)); // under 1, which the index no longer lists
    added(model, NO_LIMIT, five); // a temporary error; did it apply?
    List<KvEvent> run = call(model, NO_LIMIT, five, six);
    assertThat(run).doesNotContain(six.events().events().get(0));
    model.passed(five.seq()); // DUPLICATE: the index had 5, not 6

    Batch sixAgain = Batches.live(six.seq(), six.events()); // a replayed copy
    assertThat(call(model, NO_LIMIT, sixAgain)).doesNotContain(six.events().events().get(0));
  }

  @Test
  void callEvents_sameRange_sameEventsUntilItSettles() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 1L, 2L)));
    Batch b = batch(stored(null, 3L));
    KvEventBatch first = model.eventsToApply(List.of(b), NO_LIMIT);
    touch(model, 1); // over-predicted: the size falls, evicting more, which goes in the next call
    assertThat(model.eventsToApply(List.of(b), NO_LIMIT)).isSameAs(first);
    model.applied(b.seq());
    assertThat(removedBlocks(apply(model, batch()))).isNotEmpty();
  }

  @Test
  void changes_atMostTheRoomLeft_theRestInTheNextCall() {
    EvictionModel model = new EvictionModel(1);
    apply(model, batch(stored(null, 1L)));
    Batch b = batch(stored(null, 2L, 3L, 4L));
    assertThat(removedBlocks(added(model, 2, b))).as("in eviction order").containsExactly(1L, 4L);
    model.applied(b.seq());
    Batch none = batch();
    assertThat(removedBlocks(added(model, 0, none))).isEmpty();
    model.applied(none.seq());
    assertThat(removedBlocks(apply(model, batch()))).containsExactly(3L);
  }

  @Test
  void enginesOwnStore_takesBackAPendingRemoval() {
    EvictionModel model = new EvictionModel(2);
    Batch b = batch(stored(null, 1L, 2L, 3L));
    assertThat(removedBlocks(added(model, NO_LIMIT, b))).containsExactly(3L);
    model.passed(b.seq() - 1); // a GAP: nothing applied
    Batch again = batch(stored(2L, 3L));
    assertThat(added(model, NO_LIMIT, b, again))
        .as("3 stored again; 1, now the least recent, evicted")
        .containsExactly(removal(1L));
  }

  /** An engine store held back keeps the blocks the index still lists listed (even removing). */
  @Test
  void heldBackStore_ofBlocksTheIndexStillLists_keepsThemListed() {
    EvictionModel model = new EvictionModel(3);
    apply(model, batch(stored(null, 1L)));
    apply(model, batch(removal(1L)));
    apply(model, batch(stored(null, 5L, 6L, 7L)));
    apply(model, batch(stored(null, 8L))); // 7 evicted, its removal gone out
    BlockStored under = stored(1L, 5L, 9L); // under 1, which the index does not list
    Batch b = batch(under);
    assertThat(call(model, NO_LIMIT, b)).doesNotContain(under);
    model.applied(b.seq());
    assertThat(model.listed(5)).as("5 is in the index").isTrue();
    assertThat(model.listed(9)).as("9 follows 5, which is listed").isTrue();
  }

  @Test
  void store_underAParentTheModelRemoved_heldBackUntilATouchPlacesItsChain() {
    EvictionModel model = new EvictionModel(4);
    apply(model, batch(stored(null, 1L, 2L, 4L)));
    assertThat(removedBlocks(apply(model, batch(stored(null, 8L, 9L))))).containsExactly(4L);
    BlockStored orphan = stored(4L, 5L); // under 4, which the model removed
    Batch b = batch(orphan);

    assertThat(call(model, NO_LIMIT, b)).doesNotContain(orphan);
    model.applied(b.seq());
    assertThat(model.holds(5)).isTrue();
    assertThat(model.listed(5)).isFalse();

    touch(model, 0, 1, 2, 4, 5);
    assertThat(apply(model, batch())).startsWith(restored(1L, 2L, 4L, 5L));
    assertThat(model.listed(5)).isTrue();
  }

  /**
   * Nothing a router says lists a block whose removal the engine published: not its chain either.
   */
  @Test
  void touch_ofABlockWhoseRemovalTheEnginePublished_restoresNothingFromIt() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L, 2L, 4L)));
    apply(model, batch(removal(4L)));
    Batch b = batch(stored(4L, 5L));
    apply(model, b);

    touch(model, 0, 1, 2, 4, 5);
    assertThat(apply(model, batch())).isEmpty();
    assertThat(model.listed(4)).isFalse();
    assertThat(model.listed(5)).as("it waits for the engine to store 4 again").isFalse();
    assertThat(model.restored()).isZero();
  }

  /** A prompt the model never saw, however it was observed, is not stored under the pod. */
  @Test
  void touch_ofBlocksTheModelNeverSaw_restoresNothing() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L, 2L)));
    touch(model, -8, 70, 71, 72, 73);
    assertThat(apply(model, batch())).isEmpty();
    assertThat(model.listed(70)).isFalse();
    assertThat(model.restored()).isZero();
  }

  /** Blocks past what the engine reported cached are not restored: the engine computed them. */
  @Test
  void touch_restoresNoDeeperThanTheBlocksTheEngineReportedCached() {
    EvictionModel model = new EvictionModel(3);
    apply(model, batch(stored(null, 1L, 2L, 3L)));
    apply(model, batch(stored(null, 7L, 8L))); // the model evicts 3 and 2
    assertThat(model.listed(2) || model.listed(3)).isFalse();

    model.touched(List.of(new Touch(0, new long[] {1, 2, 3}, 0, 2, LATER)), 0, true);

    assertThat(apply(model, batch())).startsWith(restored(1L, 2L));
    assertThat(model.listed(2)).isTrue();
    assertThat(model.listed(3)).isFalse();
  }

  /**
   * A touch recorded before the engine published a block's removal shows a state the engine left
   * since: it restores nothing of that block, even when the model removed it again later.
   */
  @Test
  void touch_olderThanTheBlocksLastPublishedRemoval_restoresNothingOfIt() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 1L, 2L)));
    apply(model, Batches.live(seq++, KvEventBatch.of(5.0, List.of(removal(2L)), 0)));
    apply(model, batch(stored(1L, 2L)));
    apply(model, batch(stored(null, 7L, 8L))); // the model evicts 1 and 2
    assertThat(model.listed(2)).isFalse();

    model.touched(List.of(new Touch(0, new long[] {1, 2}, 0, 2, 4_000)), 0, true);
    apply(model, batch());
    assertThat(model.listed(1)).isTrue();
    assertThat(model.listed(2)).as("recorded at 4 s, the removal published at 5 s").isFalse();
    model.touched(List.of(new Touch(0, new long[] {1, 2}, 0, 2, 6_000)), 0, true);
    assertThat(apply(model, batch())).startsWith(restored(1L, 2L));
  }

  @Test
  void store_underAParentTheModelNeverSaw_isTakenAsPlaced() {
    EvictionModel model = new EvictionModel(8);
    BlockStored underOld = stored(77L, 5L); // 77: older than the ring, or another pod's
    Batch b = batch(underOld);
    assertThat(call(model, NO_LIMIT, b)).contains(underOld);
  }

  @Test
  void store_heldBack_followsItsParentOnceTheEngineStoresIt() {
    EvictionModel model = new EvictionModel(8);
    apply(model, batch(stored(null, 1L, 2L, 6L)));
    apply(model, batch(removal(6L)));
    apply(model, batch(stored(6L, 7L)));
    BlockStored parent = stored(2L, 6L);

    List<KvEvent> call = added(model, NO_LIMIT, batch(parent));
    assertThat(call).containsExactly(restored(6L, 7L));
    assertThat(model.listed(7)).isTrue();
  }

  @Test
  void store_heldBack_evictedBeforeItsParentCame_removesNothing() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 9L)));
    apply(model, batch(removal(9L)));
    apply(model, batch(stored(9L, 1L)));
    assertThat(apply(model, batch(stored(null, 2L, 3L)))).as("1 was never listed").isEmpty();
    assertThat(model.holds(1)).isFalse();
  }

  /** A restore sent in a call that did not settle may be in the index: evicted, it is removed. */
  @Test
  void evict_aRestoreSentInAnUnsettledCall_removesIt() {
    EvictionModel model = new EvictionModel(2);
    apply(model, batch(stored(null, 1L, 2L)));
    apply(model, batch(stored(null, 3L, 4L))); // the model evicts 2 and 1
    touch(model, 0, 1, 2);
    Batch b = batch();
    assertThat(added(model, NO_LIMIT, b)).startsWith(restored(null, 1L, 2L));
    // the call met a temporary error; then more blocks evict 1 and 2
    Batch next = batch(stored(null, 5L, 6L));
    assertThat(removedBlocks(added(model, NO_LIMIT, b, next))).contains(1L, 2L);
  }

  /** Evicting a restore not sent yet makes the restores chained after it wait for it. */
  @Test
  void evict_aPendingRestore_theRestoresChainedAfterItWait() {
    EvictionModel model = new EvictionModel(3);
    touch(model, 0, 1, 2);
    touch(model, 0, 5, 2); // 2 used again, more recently than 1
    assertThat(apply(model, batch(stored(null, 7L, 8L, 9L))))
        .as("none of the restores had gone out")
        .isEmpty();
    assertThat(model.holds(1)).isFalse();
    assertThat(model.listed(7) && model.listed(8) && model.listed(9)).isTrue();
  }

  @Test
  void touched_theMeanErrorOfARead_movesTheSizeWithinItsBounds() {
    EvictionModel model = new EvictionModel(128);
    model.touched(List.of(seen(1, new long[0], 5)), 0, false);
    assertThat(model.size()).as("another rank's request").isEqualTo(128);
    touch(model, -5);
    assertThat(model.size()).as("never above the engine's capacity").isEqualTo(128);
    model.touched(List.of(seen(0, new long[0], 1), seen(0, new long[0], 3)), 0, false);
    assertThat(model.size()).as("the mean of a read, not the sum").isEqualTo(126);
    touch(model, 1000);
    assertThat(model.size()).as("at most capacity / 16 a read").isEqualTo(118);
    for (int i = 0; i < 100; i++) {
      touch(model, 1000);
    }
    assertThat(model.size()).as("never below capacity / 16").isEqualTo(8);
    touch(model, -3);
    assertThat(model.size()).isEqualTo(11);
  }

  @Test
  void touched_overPredicted_shrinksAndEvicts() {
    EvictionModel model = new EvictionModel(64);
    apply(model, batch(stored(null, 1L, 2L, 3L, 4L, 5L, 6L)));
    for (int i = 0; i < 60; i++) {
      touch(model, 1, 1, 2);
    }
    assertThat(model.size()).isEqualTo(4);
    assertThat(removedBlocks(apply(model, batch()))).containsExactly(6L, 5L);
  }

  @Test
  void allBlocksCleared_dropsTheModelAndItsPendingChanges() {
    EvictionModel model = new EvictionModel(2);
    Batch b = batch(stored(null, 1L, 2L, 3L));
    added(model, NO_LIMIT, b);
    model.passed(b.seq() - 1);
    Batch cleared = batch(AllBlocksCleared.INSTANCE, stored(null, 5L));
    assertThat(added(model, NO_LIMIT, b, cleared)).isEmpty();
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
  void prime_learnsTheOrderFromTheRing_removingAndCountingNothingItDropped() {
    EvictionModel model = new EvictionModel(3);
    Batch old = batch(stored(null, 1L, 2L));
    Batch mid = batch(stored(null, 3L, 4L));
    Batch applied = batch(stored(null, 5L));
    Batch pending = batch(stored(null, 6L));
    model.prime(List.of(old, mid, applied, pending), applied.seq());

    assertThat(model.holds(1)).isFalse();
    assertThat(model.holds(5)).isTrue();
    assertThat(model.holds(6)).as("past the watermark: applied later").isFalse();
    assertThat(model.evicted()).isZero();
    assertThat(added(model, NO_LIMIT, applied)).as("taken in already; nothing removed").isEmpty();
    model.applied(applied.seq());
    assertThat(removedBlocks(apply(model, pending))).containsExactly(4L);
  }

  @Test
  void otherTiersAndGroups_passThroughUnmodelled() {
    EvictionModel model = new EvictionModel(1);
    BlockStored cpu =
        new BlockStored(
            List.of(1L, 2L), null, List.of(), 16, null, "CPU", null, null, null, null, null);
    BlockStored otherGroup =
        new BlockStored(
            List.of(4L, 5L), null, List.of(), 16, null, null, null, null, 1, null, null);
    assertThat(apply(model, batch(cpu, otherGroup))).isEmpty();
    assertThat(model.held()).isZero();
  }

  /**
   * A read of restores far past the model's size evicts most of them before they go out: the work
   * stays linear in the blocks touched, never a scan of every pending block per eviction.
   */
  @Test
  void touched_restoresPastTheSize_workLinearInTheBlocks() {
    int chains = 64;
    int length = 64;
    EvictionModel model = new EvictionModel(chains * length);
    List<long[]> prompts = new ArrayList<>();
    for (int c = 0; c < chains; c++) {
      long[] chain = new long[length];
      for (int i = 0; i < length; i++) {
        chain[i] = 100_000L * c + i + 1;
      }
      prompts.add(chain);
      List<Long> boxed = new ArrayList<>();
      for (long b : chain) {
        boxed.add(b);
      }
      apply(model, batch(BlockStored.of(boxed, null, List.of(), 16)));
    }
    for (int i = 0; i < 16; i++) {
      touch(model, 1_000_000); // over-predicted: the size falls to a sixteenth, evicting the rest
    }
    apply(model, batch());
    long before = model.work();

    List<Touch> read = new ArrayList<>();
    for (long[] chain : prompts) {
      read.add(seen(0, chain, -length));
    }
    model.touched(read, 0, true);

    assertThat(model.work() - before).isLessThan(16L * chains * length);
  }

  @Test
  void capacity_atLeastOne() {
    assertThatThrownBy(() -> new EvictionModel(0)).hasMessageContaining("capacity");
  }
}
