package io.kvindex.ingester.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every transition between two block states, as a table: block 1 and then block 2 enter state
 * {@code from} (so 1 is first in that state's order), then block 1 moves to {@code to}; the row
 * says what the table holds afterwards, each order first to last: {@code held} (least recently used
 * first), {@code pending}, {@code removing}, {@code removed}, and each block's state.
 */
class ModelBlocksTest {
  private static final long X = 1;
  private static final long Y = 2;

  static Stream<Arguments> transitions() {
    return Stream.of(
        // from nothing
        row(null, null, "held[] pending[] removing[] removed[] 1=- 2=-"),
        row(null, "LISTED", "held[1] pending[] removing[] removed[] 1=LISTED 2=-"),
        row(null, "PENDING", "held[1] pending[1] removing[] removed[] 1=PENDING 2=-"),
        row(null, "WAITING", "held[1] pending[] removing[] removed[] 1=WAITING 2=-"),
        row(null, "REMOVING", "held[] pending[] removing[1] removed[] 1=REMOVING 2=-"),
        row(
            null,
            "REMOVED_BY_MODEL",
            "held[] pending[] removing[] removed[1] 1=REMOVED_BY_MODEL 2=-"),
        row(
            null,
            "REMOVED_BY_ENGINE",
            "held[] pending[] removing[] removed[1] 1=REMOVED_BY_ENGINE 2=-"),
        // between held states a block keeps its place by use
        row("LISTED", null, "held[2] pending[] removing[] removed[] 1=- 2=LISTED"),
        row("LISTED", "LISTED", "held[1,2] pending[] removing[] removed[] 1=LISTED 2=LISTED"),
        row("LISTED", "PENDING", "held[1,2] pending[1] removing[] removed[] 1=PENDING 2=LISTED"),
        row("LISTED", "WAITING", "held[1,2] pending[] removing[] removed[] 1=WAITING 2=LISTED"),
        row("LISTED", "REMOVING", "held[2] pending[] removing[1] removed[] 1=REMOVING 2=LISTED"),
        row(
            "LISTED",
            "REMOVED_BY_MODEL",
            "held[2] pending[] removing[] removed[1] 1=REMOVED_BY_MODEL 2=LISTED"),
        row(
            "LISTED",
            "REMOVED_BY_ENGINE",
            "held[2] pending[] removing[] removed[1] 1=REMOVED_BY_ENGINE 2=LISTED"),
        row("PENDING", null, "held[2] pending[2] removing[] removed[] 1=- 2=PENDING"),
        row("PENDING", "LISTED", "held[1,2] pending[2] removing[] removed[] 1=LISTED 2=PENDING"),
        row(
            "PENDING",
            "PENDING",
            "held[1,2] pending[1,2] removing[] removed[] 1=PENDING 2=PENDING"),
        row("PENDING", "WAITING", "held[1,2] pending[2] removing[] removed[] 1=WAITING 2=PENDING"),
        row("PENDING", "REMOVING", "held[2] pending[2] removing[1] removed[] 1=REMOVING 2=PENDING"),
        row(
            "PENDING",
            "REMOVED_BY_MODEL",
            "held[2] pending[2] removing[] removed[1] 1=REMOVED_BY_MODEL 2=PENDING"),
        row(
            "PENDING",
            "REMOVED_BY_ENGINE",
            "held[2] pending[2] removing[] removed[1] 1=REMOVED_BY_ENGINE 2=PENDING"),
        row("WAITING", null, "held[2] pending[] removing[] removed[] 1=- 2=WAITING"),
        row("WAITING", "LISTED", "held[1,2] pending[] removing[] removed[] 1=LISTED 2=WAITING"),
        // a block that becomes pending goes last in the order to store
        row("WAITING", "PENDING", "held[1,2] pending[1] removing[] removed[] 1=PENDING 2=WAITING"),
        row("WAITING", "WAITING", "held[1,2] pending[] removing[] removed[] 1=WAITING 2=WAITING"),
        row("WAITING", "REMOVING", "held[2] pending[] removing[1] removed[] 1=REMOVING 2=WAITING"),
        row(
            "WAITING",
            "REMOVED_BY_MODEL",
            "held[2] pending[] removing[] removed[1] 1=REMOVED_BY_MODEL 2=WAITING"),
        row(
            "WAITING",
            "REMOVED_BY_ENGINE",
            "held[2] pending[] removing[] removed[1] 1=REMOVED_BY_ENGINE 2=WAITING"),
        // a block held again enters at the most recent end
        row("REMOVING", null, "held[] pending[] removing[2] removed[] 1=- 2=REMOVING"),
        row("REMOVING", "LISTED", "held[1] pending[] removing[2] removed[] 1=LISTED 2=REMOVING"),
        row("REMOVING", "PENDING", "held[1] pending[1] removing[2] removed[] 1=PENDING 2=REMOVING"),
        row("REMOVING", "WAITING", "held[1] pending[] removing[2] removed[] 1=WAITING 2=REMOVING"),
        // removing again keeps the first eviction's place
        row(
            "REMOVING",
            "REMOVING",
            "held[] pending[] removing[1,2] removed[] 1=REMOVING 2=REMOVING"),
        row(
            "REMOVING",
            "REMOVED_BY_MODEL",
            "held[] pending[] removing[2] removed[1] 1=REMOVED_BY_MODEL 2=REMOVING"),
        row(
            "REMOVING",
            "REMOVED_BY_ENGINE",
            "held[] pending[] removing[2] removed[1] 1=REMOVED_BY_ENGINE 2=REMOVING"),
        row(
            "REMOVED_BY_MODEL",
            null,
            "held[] pending[] removing[] removed[2] 1=- 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_MODEL",
            "LISTED",
            "held[1] pending[] removing[] removed[2] 1=LISTED 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_MODEL",
            "PENDING",
            "held[1] pending[1] removing[] removed[2] 1=PENDING 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_MODEL",
            "WAITING",
            "held[1] pending[] removing[] removed[2] 1=WAITING 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_MODEL",
            "REMOVING",
            "held[] pending[] removing[1] removed[2] 1=REMOVING 2=REMOVED_BY_MODEL"),
        // removed again is the latest removal
        row(
            "REMOVED_BY_MODEL",
            "REMOVED_BY_MODEL",
            "held[] pending[] removing[] removed[2,1] 1=REMOVED_BY_MODEL 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_MODEL",
            "REMOVED_BY_ENGINE",
            "held[] pending[] removing[] removed[2,1] 1=REMOVED_BY_ENGINE 2=REMOVED_BY_MODEL"),
        row(
            "REMOVED_BY_ENGINE",
            null,
            "held[] pending[] removing[] removed[2] 1=- 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "LISTED",
            "held[1] pending[] removing[] removed[2] 1=LISTED 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "PENDING",
            "held[1] pending[1] removing[] removed[2] 1=PENDING 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "WAITING",
            "held[1] pending[] removing[] removed[2] 1=WAITING 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "REMOVING",
            "held[] pending[] removing[1] removed[2] 1=REMOVING 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "REMOVED_BY_MODEL",
            "held[] pending[] removing[] removed[2,1] 1=REMOVED_BY_MODEL 2=REMOVED_BY_ENGINE"),
        row(
            "REMOVED_BY_ENGINE",
            "REMOVED_BY_ENGINE",
            "held[] pending[] removing[] removed[2,1] 1=REMOVED_BY_ENGINE 2=REMOVED_BY_ENGINE"));
  }

  private static Arguments row(String from, String to, String after) {
    return Arguments.of(from, to, after);
  }

  private static BlockState state(String name) {
    return name == null ? null : BlockState.valueOf(name);
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @MethodSource("transitions")
  void set_movesOneBlockAndKeepsEveryOrder(String from, String to, String after) {
    ModelBlocks blocks = new ModelBlocks(2);
    blocks.set(X, state(from));
    blocks.set(Y, state(from));

    blocks.set(X, state(to));

    assertThat(observe(blocks)).isEqualTo(after);
  }

  @Test
  void set_removedPastTheBound_forgetsTheOldestRemoved() {
    ModelBlocks blocks = new ModelBlocks(2);
    blocks.set(X, BlockState.REMOVED_BY_ENGINE);
    blocks.set(Y, BlockState.REMOVED_BY_MODEL);
    blocks.set(X, BlockState.REMOVED_BY_ENGINE); // the latest removal again

    blocks.set(3L, BlockState.REMOVED_BY_MODEL);

    assertThat(blocks.get(Y)).isNull();
    assertThat(blocks.get(X)).isEqualTo(BlockState.REMOVED_BY_ENGINE);
    assertThat(blocks.get(3L)).isEqualTo(BlockState.REMOVED_BY_MODEL);
  }

  @Test
  void pend_placesWhatWaitedUnderIt_inTheOrderItWaited() {
    ModelBlocks blocks = new ModelBlocks(8);
    blocks.set(X, BlockState.REMOVED_BY_MODEL);
    blocks.waitFor(Y, X);
    blocks.waitFor(3L, Y);
    blocks.waitFor(4L, X);

    blocks.pend(X, null);

    assertThat(blocks.changes(Long.MAX_VALUE).stores()).containsExactly(X, Y, 4L, 3L);
  }

  @Test
  void drop_ofAPendingBlock_makesThePendingBlocksUnderItWaitAgain() {
    ModelBlocks blocks = new ModelBlocks(8);
    blocks.pend(X, null);
    blocks.pend(Y, X);
    blocks.pend(3L, Y);

    assertThat(blocks.drop(X, BlockState.REMOVED_BY_MODEL)).isEqualTo(BlockState.PENDING);

    assertThat(blocks.get(Y)).isEqualTo(BlockState.WAITING);
    assertThat(blocks.get(3L)).isEqualTo(BlockState.WAITING);
    assertThat(blocks.changes(Long.MAX_VALUE).stores()).isEmpty();
  }

  @Test
  void listed_leavesItsChain_soThatDroppingItsParentLeavesItListed() {
    ModelBlocks blocks = new ModelBlocks(8);
    blocks.pend(X, null);
    blocks.pend(Y, X);
    blocks.set(Y, BlockState.LISTED); // its store applied

    blocks.drop(X, BlockState.REMOVED_BY_MODEL);

    assertThat(blocks.get(Y)).isEqualTo(BlockState.LISTED);
  }

  /** What the table holds, each order first to last; destructive (it empties the table). */
  private static String observe(ModelBlocks blocks) {
    String states = "1=" + name(blocks.get(X)) + " 2=" + name(blocks.get(Y));
    List<Long> pending = blocks.changes(Long.MAX_VALUE).stores();
    List<Long> removing = new ArrayList<>(blocks.removing());
    List<Long> removed = new ArrayList<>();
    for (long b : new long[] {X, Y}) {
      BlockState s = blocks.get(b);
      if (s != null && s.removed()) {
        removed.add(b);
      }
    }
    if (removed.size() == 2) {
      blocks.set(99L, BlockState.REMOVED_BY_MODEL); // past the bound: the oldest is forgotten
      if (blocks.get(X) != null) {
        removed = List.of(Y, X);
      }
    }
    List<Long> held = new ArrayList<>();
    while (blocks.heldCount() > 0) {
      Long b = blocks.leastRecentlyUsed();
      held.add(b);
      blocks.set(b, null);
    }
    return "held"
        + list(held)
        + " pending"
        + list(pending)
        + " removing"
        + list(removing)
        + " removed"
        + list(removed)
        + " "
        + states;
  }

  private static String name(BlockState s) {
    return s == null ? "-" : s.name();
  }

  private static String list(List<Long> blocks) {
    return blocks.toString().replace(" ", "");
  }
}
