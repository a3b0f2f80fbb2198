package io.kvindex.ingester.stream;

import static io.kvindex.ingester.stream.BlockState.PENDING;
import static io.kvindex.ingester.stream.BlockState.WAITING;

import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.Tiers;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The blocks an {@link EvictionModel} knows, each in one {@link BlockState}, and every transition
 * between those states. Beside each block's state it keeps the orders the model's decisions read:
 * the held blocks by last use, the pending ones in the order to store them (each after its parent),
 * the removing ones in eviction order, the removed ones by when they were removed, the latest
 * {@code removedBound} of them (older ones are forgotten), and the parents of the pending and
 * waiting blocks ({@link Chains}). Not thread-safe.
 */
final class ModelBlocks {
  private final Map<Long, BlockState> states = new HashMap<>();

  /** Held blocks, least recently used first (an access-ordered map; the values are unused). */
  private final LinkedHashMap<Long, Boolean> byUse = new LinkedHashMap<>(1024, 0.75f, true);

  private final LinkedHashSet<Long> pending = new LinkedHashSet<>();
  private final LinkedHashSet<Long> removing = new LinkedHashSet<>();
  private final LinkedHashSet<Long> removed = new LinkedHashSet<>();
  private final Chains chains = new Chains();
  private final int removedBound;
  private long work;

  /** A table that remembers the latest {@code removedBound} removed blocks. */
  ModelBlocks(int removedBound) {
    this.removedBound = removedBound;
  }

  /** The block's state, or null when the model does not know it. */
  BlockState get(Long block) {
    return states.get(block);
  }

  /** Whether the block is in {@code state}. */
  boolean is(Long block, BlockState state) {
    return states.get(block) == state;
  }

  /** Whether the engine holds the block, as far as the model knows. */
  boolean held(Long block) {
    BlockState s = states.get(block);
    return s != null && s.held();
  }

  /** Blocks held. */
  int heldCount() {
    return byUse.size();
  }

  /** The held block least recently used; only when one is held. */
  Long leastRecentlyUsed() {
    return byUse.keySet().iterator().next();
  }

  /** Moves a held block to the most recent end (a get of an access-ordered map moves it). */
  void use(Long block) {
    byUse.get(block);
  }

  /** Removing blocks, the first evicted first. */
  Set<Long> removing() {
    return Collections.unmodifiableSet(removing);
  }

  /** Blocks visited by the chain walks and {@link #changes} so far (part of the model's cost). */
  long work() {
    return work;
  }

  /**
   * The one transition: the block leaves its state (and that state's order) for {@code to} (null:
   * forgotten). A block that starts being held enters at the most recent end; one held already
   * keeps its place (a change of state is not a use). One that stops being pending or waiting
   * leaves its parent's chain. Entering a removed state appends the block to the removed ones even
   * when it was removed already; entering any other state it is in already changes nothing.
   */
  void set(Long block, BlockState to) {
    BlockState from = states.get(block);
    if (from == to && (to == null || !to.removed())) {
      return;
    }
    Set<Long> left = from == null ? null : orderOf(from);
    if (left != null) {
      left.remove(block);
    }
    if (to == null) {
      states.remove(block);
    } else {
      states.put(block, to);
      Set<Long> entered = orderOf(to);
      if (entered != null) {
        entered.add(block);
      }
    }
    if (chained(from) && !chained(to)) {
      chains.unlink(block);
    }
    boolean wasHeld = from != null && from.held();
    boolean isHeld = to != null && to.held();
    if (wasHeld && !isHeld) {
      byUse.remove(block);
    } else if (isHeld && !wasHeld) {
      byUse.put(block, Boolean.TRUE);
    }
    if (removed.size() > removedBound) {
      set(removed.iterator().next(), null);
    }
  }

  /** The block is pending, to be stored after {@code parent}; what waited under it follows it. */
  void pend(Long block, Long parent) {
    set(block, PENDING);
    chains.unlink(block);
    chains.link(block, parent);
    placed(block);
  }

  /** The block waits for {@code parent} to be listed. */
  void waitFor(Long block, Long parent) {
    set(block, WAITING);
    chains.link(block, parent);
  }

  /** The block is listed or pending now: what waited under it is pending after it. */
  void placed(Long block) {
    ArrayDeque<Long> ready = new ArrayDeque<>();
    ready.add(block);
    while (!ready.isEmpty()) {
      for (Long child : chains.children(ready.poll())) {
        work++;
        if (is(child, WAITING)) {
          set(child, PENDING);
          ready.add(child);
        }
      }
    }
  }

  /**
   * The engine no longer holds the block ({@code to} says what the index has of it): a pending one
   * is no longer stored, and the pending blocks under it wait for it again (it may come back).
   * Returns the state it had.
   */
  BlockState drop(Long block, BlockState to) {
    BlockState s = states.get(block);
    set(block, to);
    if (s == PENDING) {
      demote(block);
    }
    return s;
  }

  /** A block that waits again: the pending blocks under it wait too, and theirs. */
  private void demote(Long block) {
    ArrayDeque<Long> todo = new ArrayDeque<>();
    todo.add(block);
    while (!todo.isEmpty()) {
      for (Long child : chains.children(todo.poll())) {
        work++;
        if (is(child, PENDING)) {
          set(child, WAITING);
          todo.add(child);
        }
      }
    }
  }

  /** Forgets every block whose state {@code which} accepts. */
  void forget(Predicate<BlockState> which) {
    List<Long> gone = new ArrayList<>();
    states.forEach(
        (block, state) -> {
          if (which.test(state)) {
            gone.add(block);
          }
        });
    gone.forEach(block -> set(block, null));
  }

  /**
   * What a call carries of the model's changes.
   *
   * @param events the stores, then the removal
   * @param stores the blocks stored
   * @param removals the blocks removed
   */
  record Changes(List<KvEvent> events, List<Long> stores, Set<Long> removals) {}

  /** Pending stores (runs chained parent first), then one removal, at most {@code room} blocks. */
  Changes changes(long room) {
    List<KvEvent> out = new ArrayList<>();
    List<Long> stores = new ArrayList<>();
    List<Long> run = new ArrayList<>();
    Long runParent = null;
    for (Long b : pending) {
      if (stores.size() >= room) {
        break;
      }
      work++;
      Long parent = chains.parent(b);
      boolean continues = !run.isEmpty() && parent != null && parent.equals(last(run));
      if (!continues) {
        addStore(out, run, runParent);
        run = new ArrayList<>();
        runParent = parent;
      }
      run.add(b);
      stores.add(b);
    }
    addStore(out, run, runParent);
    Set<Long> removals = new LinkedHashSet<>();
    for (Long b : removing) {
      if (stores.size() + removals.size() >= room) {
        break;
      }
      work++;
      removals.add(b);
    }
    if (!removals.isEmpty()) {
      out.add(new BlockRemoved(List.copyOf(removals), Tiers.GPU, null));
    }
    return new Changes(out, stores, removals);
  }

  private static Long last(List<Long> run) {
    return run.get(run.size() - 1);
  }

  private static void addStore(List<KvEvent> out, List<Long> run, Long parent) {
    if (!run.isEmpty()) {
      out.add(BlockStored.of(run, parent, List.of(), 0));
    }
  }

  private static boolean chained(BlockState state) {
    return state == PENDING || state == WAITING;
  }

  /** The ordered set a state's blocks are kept in, or null for a state with no order. */
  private Set<Long> orderOf(BlockState state) {
    return switch (state) {
      case PENDING -> pending;
      case REMOVING -> removing;
      case REMOVED_BY_MODEL, REMOVED_BY_ENGINE -> removed;
      case LISTED -> null;
      case WAITING -> null;
    };
  }
}
