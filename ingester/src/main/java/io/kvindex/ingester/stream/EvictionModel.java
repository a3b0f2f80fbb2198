package io.kvindex.ingester.stream;

import io.kvindex.common.Check;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.Touch;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The GPU cache of an engine that does not publish all of its evictions, as the index can infer it:
 * the blocks of one stream in the order the engine last used them, no more than the engine holds.
 * What it evicts, the index removes; what an observed request shows the engine still holds, the
 * index lists again. Pure: the stream's worker feeds it what it applies and what routers observed.
 * Not thread-safe.
 *
 * <p>Implementation notes. vLLM frees a finished request's blocks last block first to the tail of
 * its free queue and evicts from the head, so a prompt's tail goes before its head and a block used
 * again (a prefix hit) moves to the tail. The model is that order: a store enters its blocks last
 * first (and makes its parent, which the engine just used, more recent than before), and a touch
 * (an observed request, {@link Touch}) moves the prompt's blocks to the most recent end, last
 * first. Once past its size it evicts the least recently used. Only full-attention GPU blocks
 * (cache group 0) are modelled; other tiers and groups pass through as published.
 *
 * <p>Its size starts at the engine's capacity ({@code num_gpu_blocks}), but an engine holds fewer
 * blocks than it has: a request's last, partly filled block has no hash, and running requests'
 * blocks cannot be evicted. Each read of touches moves the size by the mean error of the index's
 * predictions for them (what the model had listed, against what the engine reported): down when
 * over-predicted, up when under, by at most {@code capacity / 16} a read, within [{@code capacity /
 * 16}, {@code capacity}].
 *
 * <p>Each block the model holds is <b>listed</b> (the index has it), <b>pending</b> (to be stored
 * with the next apply: a touch showed the engine holds it, and its parent is listed or pending
 * before it) or <b>waiting</b> (held, but its parent is not listed: storing it would give it no
 * place in the index's chain, and lookups of the whole group fall back to block fields while any
 * such block is there). A block it evicted is <b>removing</b> until a call carrying its removal
 * applied, then <b>removed</b> (kept in a set bounded by the capacity). A store of the engine's
 * under a parent that is pending, waiting or removed is held back from the call (by batch sequence
 * and event position, so a retry or a replay holds back the same event), and its blocks wait for
 * the parent; a parent the model does not know is taken as listed (the ring predates it, or another
 * pod holds it). A touch restores its prompt's chain from block 0, which places what waited under
 * it.
 *
 * <p>Changes reach the index with the stream's next apply call, after the call's own events:
 * pending stores first (a chain's parent before its children), then one removal; a run of batches
 * carries what fits its chunk. The events of a call are built once per range of batches and sent
 * again as they are until the call settles, so that a batch applied in chunks resumes on the same
 * events. A store sent in a call that did not settle may have applied: evicted meanwhile, it is
 * removed. A purge of the stream ({@link #clear}) drops the model with the index's entries.
 */
final class EvictionModel {
  private enum State {
    LISTED,
    PENDING,
    WAITING
  }

  /** Held blocks, least recently used first (the values are unused). */
  private final LinkedHashMap<Long, Boolean> order = new LinkedHashMap<>(1024, 0.75f, true);

  /** What the index knows of each held block (kept apart, so that a change is not a use). */
  private final Map<Long, State> held = new HashMap<>();

  /** Parents of the pending and waiting blocks. */
  private final Map<Long, Long> parentOf = new HashMap<>();

  /** The pending and waiting blocks by the parent they were stored under. */
  private final Map<Long, Set<Long>> under = new HashMap<>();

  /** Pending blocks in the order to store them: each after its parent. */
  private final LinkedHashSet<Long> pending = new LinkedHashSet<>();

  /** Blocks the index still lists that the model evicted, in eviction order. */
  private final LinkedHashSet<Long> removing = new LinkedHashSet<>();

  /**
   * Blocks the index does not list, the latest {@code capacity} of them: true where the model
   * removed (or dropped) the block, false where the engine published its removal.
   */
  private final LinkedHashMap<Long, Boolean> removed = new LinkedHashMap<>();

  /**
   * When the engine last published each block's removal (its batch's time, ms), the latest ones.
   */
  private final LinkedHashMap<Long, Long> publishedRemovalAt = new LinkedHashMap<>();

  /** Blocks sent as stores in calls that have not settled: they may be in the index. */
  private final Set<Long> unsure = new HashSet<>();

  /** Engine stores held back, by batch sequence: their positions among the batch's events. */
  private final TreeMap<Long, Set<Integer>> heldBack = new TreeMap<>();

  private final int capacity;
  private final double smallest;
  private final double largestStep;
  private double size;
  private long takenThrough = -1;
  private long evicted;
  private long restored;
  private long work;
  private List<Long> sentStores = List.of();
  private Set<Long> sentRemovals = Set.of();
  private long builtFirst = -1;
  private long builtLast = -1;
  private KvEventBatch built;

  /** A model of an engine that caches {@code capacity} blocks. */
  EvictionModel(int capacity) {
    this.capacity = Check.atLeast(capacity, 1, "capacity");
    this.smallest = Math.max(1, capacity / 16.0);
    this.largestStep = Math.max(1, capacity / 16.0);
    this.size = capacity;
  }

  /** The engine's capacity in blocks. */
  int capacity() {
    return capacity;
  }

  /** How many blocks the model keeps now: its estimate of what the engine holds when full. */
  int size() {
    return (int) size;
  }

  /** Blocks held now, as far as the model knows. */
  int held() {
    return order.size();
  }

  /** Blocks evicted so far (whether or not the removal has reached the index yet). */
  long evicted() {
    return evicted;
  }

  /** Blocks restored by touches so far. */
  long restored() {
    return restored;
  }

  /**
   * Blocks visited so far, in every structure the model keeps: its cost, which tests and the
   * benchmark compare with the blocks it took in.
   */
  long work() {
    return work;
  }

  /** Whether the model holds the block now. */
  boolean holds(long block) {
    return held.containsKey(block);
  }

  /** Whether the index lists the block, or will once the pending changes are applied. */
  boolean listed(long block) {
    State s = held.get(block);
    return s == State.LISTED || s == State.PENDING;
  }

  /** Whether a call is built and has not settled: its events must be sent again as they are. */
  boolean callInFlight() {
    return built != null;
  }

  /**
   * What the stream's next owner needs to go on where this model is: its size, and the removals it
   * decided that the index has not applied (at most {@link InferenceHandover#MAX_REMOVALS}, the
   * oldest first).
   */
  InferenceHandover handover() {
    int n = Math.min(removing.size(), InferenceHandover.MAX_REMOVALS);
    long[] out = new long[n];
    Iterator<Long> it = removing.iterator();
    for (int i = 0; i < n; i++) {
      out[i] = it.next();
    }
    return new InferenceHandover(Math.max(1, (int) size), out);
  }

  /**
   * Goes on from a former owner's model: its size (set before {@link #prime}, so that the ring is
   * taken in at the size the engine was found to hold), then, once primed, its removals not applied
   * (evicted here too, whatever the ring showed, and removed with the next call).
   */
  void resize(int sizeBlocks) {
    size = Math.max(smallest, Math.min(capacity, sizeBlocks));
  }

  /** The former owner's removals not applied: see {@link #resize}. */
  void evict(long[] blocks) {
    for (long block : blocks) {
      work++;
      Long b = block;
      State s = held.get(b);
      if (s == null && removed.containsKey(b)) {
        continue; // the index does not list it
      }
      if (s != null) {
        drop(b);
      }
      if (s == null || s == State.LISTED) {
        removing.add(b); // one the model does not hold may be listed still: removing it is safe
      } else {
        noteRemoved(b, true);
      }
    }
  }

  /**
   * Takes in the stream's history up to {@code throughSeq}, which the index has applied already
   * (what the engine's ring still holds, oldest first): the model learns the order of use from it,
   * and what it drops on the way is neither removed nor counted. Entries older than the ring stay
   * in the index until the engine stores them again (a request found them gone) or the model evicts
   * them.
   */
  void prime(List<Batch> history, long throughSeq) {
    long evictedBefore = evicted;
    for (Batch b : history) {
      if (b.seq() > takenThrough && b.seq() <= throughSeq) {
        take(b.seq(), b.events(), false);
        takenThrough = b.seq();
      }
    }
    removing.clear();
    removed.entrySet().removeIf(Map.Entry::getValue); // dropped while priming: never listed by it
    evicted = evictedBefore;
    takenThrough = Math.max(takenThrough, throughSeq);
  }

  /** The index lost the stream's entries (a purge): the model starts again from nothing. */
  void clear() {
    forgetHeld();
    removed.clear();
    unsure.clear();
    heldBack.clear();
    built = null;
    takenThrough = -1;
  }

  /**
   * The events to apply for {@code parts} (consecutive batches, as one call): their own but those
   * held back, then the model's changes, at most {@code room} blocks of them (a run of batches must
   * fit one call; a single batch may take them all). Parts not taken in yet are taken in first. The
   * same range gets the same events until the call settles ({@link #applied} or {@link #passed}).
   */
  KvEventBatch eventsToApply(List<Batch> parts, long room) {
    long first = parts.get(0).seq();
    long last = parts.get(parts.size() - 1).seq();
    if (built != null && first == builtFirst && last == builtLast) {
      return built;
    }
    for (Batch part : parts) {
      if (part.seq() > takenThrough) {
        take(part.seq(), part.events(), true);
        takenThrough = part.seq();
      }
    }
    List<KvEvent> events = new ArrayList<>();
    for (Batch part : parts) {
      Set<Integer> back = heldBack.getOrDefault(part.seq(), Set.of());
      List<KvEvent> own = part.events().events();
      for (int i = 0; i < own.size(); i++) {
        if (!back.contains(i)) {
          events.add(own.get(i));
        }
      }
    }
    events.addAll(changes(room));
    KvEventBatch tail = parts.get(parts.size() - 1).events();
    built = KvEventBatch.of(tail.timestamp(), events, tail.dataParallelRank());
    builtFirst = first;
    builtLast = last;
    return built;
  }

  /**
   * What an applied call carried of the model's changes.
   *
   * @param evicted blocks the index removed because the model evicted them
   * @param restored blocks the index lists again: an observed request showed them held, or they
   *     waited for their parent
   */
  record Carried(int evicted, int restored) {}

  /** The last call of {@link #eventsToApply} applied, through {@code seq}. */
  Carried applied(long seq) {
    for (Long b : sentStores) {
      work++;
      unsure.remove(b);
      if (pending.remove(b)) {
        held.put(b, State.LISTED);
        unlink(b);
        placed(b);
      }
    }
    for (Long b : sentRemovals) {
      work++;
      if (removing.remove(b)) {
        noteRemoved(b, true);
      }
    }
    Carried carried = new Carried(sentRemovals.size(), sentStores.size());
    settled(seq);
    return carried;
  }

  /**
   * The index had the last call's batches already, or not the one before them: through {@code seq}.
   */
  void passed(long watermark) {
    settled(watermark);
  }

  private void settled(long watermark) {
    heldBack.headMap(watermark, true).clear();
    sentStores = List.of();
    sentRemovals = Set.of();
    built = null;
  }

  /**
   * Observed requests on this engine, in order: each prompt's blocks the engine reported cached
   * move to the most recent end, last first. Those credited to this rank restore what the model
   * removed of that cached prefix (the engine just served it from its cache), and their prediction
   * errors move the model's size.
   */
  void touched(List<Touch> touches, int rank, boolean onlyRank) {
    long errors = 0;
    int credited = 0;
    for (Touch t : touches) {
      boolean mine = t.rank() == rank || (t.rank() < 0 && onlyRank);
      if (mine) {
        restore(t);
        errors += t.errorBlocks();
        credited++;
      }
      long[] blocks = t.blockKeys();
      for (int i = cachedDepth(t) - 1; i >= 0; i--) {
        use(blocks[i]);
      }
    }
    if (credited > 0) {
      double step = Math.max(-largestStep, Math.min(largestStep, (double) errors / credited));
      size = Math.max(smallest, Math.min(capacity, size - step));
    }
    evictOverSize();
  }

  private static int cachedDepth(Touch t) {
    return Math.min(t.cachedBlocks(), t.blockKeys().length);
  }

  /**
   * A prompt the engine just served, from its cache up to the touch's cached depth: what the model
   * removed of that chain is made listed again, parent first. Nothing else is: not a block whose
   * removal the engine published (unless the touch came after it and the model removed the block
   * since), not one the model never saw, not past the depth. The chain stops at the first block the
   * index does not list and the touch may not restore, since what follows would have no place.
   */
  private void restore(Touch t) {
    long[] blocks = t.blockKeys();
    int depth = cachedDepth(t);
    for (int i = 0; i < depth; i++) {
      work++;
      Long b = blocks[i];
      Long parent = i == 0 ? null : blocks[i - 1];
      State s = held.get(b);
      if (s == State.LISTED || s == State.PENDING) {
        continue;
      }
      if (s == State.WAITING) {
        unlink(b); // stored by the engine, held back for its parent, which precedes it here
        restored++;
        makePending(b, parent);
        continue;
      }
      if (!restorable(b, t.atMillis())) {
        if (removing.contains(b) || removed.containsKey(b)) {
          return;
        }
        continue; // never seen: older than the ring, taken as listed
      }
      if (removing.contains(b) && !sentRemovals.contains(b)) {
        removing.remove(b);
        hold(b, State.LISTED); // still in the index: its removal is not sent yet
        continue;
      }
      removing.remove(b); // its removal is in a call that has not settled: stored again after it
      restored++;
      makePending(b, parent);
    }
  }

  /**
   * Whether a touch recorded at {@code atMillis} may list the block again: the model removed it,
   * and the engine published no removal of it after the touch's request.
   */
  private boolean restorable(Long b, long atMillis) {
    boolean byModel = removing.contains(b) || Boolean.TRUE.equals(removed.get(b));
    Long publishedAt = publishedRemovalAt.get(b);
    return byModel && (publishedAt == null || atMillis > publishedAt);
  }

  /**
   * The engine holds nothing now: every held block, and every removal in progress, is forgotten.
   */
  private void forgetHeld() {
    held.clear();
    order.clear();
    parentOf.clear();
    under.clear();
    pending.clear();
    removing.clear();
  }

  /** Takes in the engine's events; with {@code holdBack}, stores the index could not place wait. */
  private void take(long seq, KvEventBatch batch, boolean holdBack) {
    List<KvEvent> events = batch.events();
    long atMillis = batch.timestamp() > 0 ? (long) (batch.timestamp() * 1000) : Long.MAX_VALUE;
    for (int i = 0; i < events.size(); i++) {
      KvEvent event = events.get(i);
      if (event instanceof AllBlocksCleared) {
        forgetHeld();
      } else if (event instanceof BlockStored s && modelled(s.tier(), s.cacheGroup())) {
        Long parent = s.parentBlockHash();
        if (parent != null) {
          usedAsParent(parent);
        }
        if (holdBack && parent != null && !placedInIndex(parent)) {
          heldBack.computeIfAbsent(seq, k -> new HashSet<>()).add(i);
          storedUnplaced(s.blockHashes(), parent);
        } else {
          storedPlaced(s.blockHashes());
        }
        evictOverSize();
      } else if (event instanceof BlockRemoved r && modelled(r.tier(), r.cacheGroup())) {
        for (Long b : r.blockHashes()) {
          work++;
          removing.remove(b);
          if (held.containsKey(b)) {
            drop(b);
          }
          noteRemoved(b, false);
          publishedRemovalAt.remove(b);
          publishedRemovalAt.put(b, atMillis);
          if (publishedRemovalAt.size() > capacity) {
            publishedRemovalAt.remove(publishedRemovalAt.keySet().iterator().next());
          }
        }
      }
    }
  }

  /** A store's parent: the engine used it just now. */
  private void usedAsParent(Long parent) {
    if (removing.remove(parent)) {
      hold(parent, State.LISTED); // the index still lists it: keep it
    } else {
      use(parent);
    }
  }

  /**
   * Whether the index lists a parent now, for the call's events that follow: a pending one goes out
   * after them, a waiting or removed one is not there; one the model does not know is taken as
   * there.
   */
  private boolean placedInIndex(Long parent) {
    State s = held.get(parent);
    if (s != null) {
      return s == State.LISTED;
    }
    return removing.contains(parent) || !removed.containsKey(parent);
  }

  /** The engine's store, applied as it is: its blocks are listed. */
  private void storedPlaced(List<Long> blocks) {
    for (int i = blocks.size() - 1; i >= 0; i--) {
      work++;
      Long b = blocks.get(i);
      removing.remove(b);
      removed.remove(b);
      unsure.remove(b);
      State s = held.get(b);
      if (s == State.PENDING) {
        pending.remove(b);
        unlink(b);
      } else if (s == State.WAITING) {
        unlink(b);
      }
      hold(b, State.LISTED);
      use(b);
    }
    for (Long b : blocks) {
      placed(b);
    }
  }

  /**
   * The engine's store, held back: its blocks are pending after their parent when it is listed or
   * pending, else they wait for it; those the index lists stay listed.
   */
  private void storedUnplaced(List<Long> blocks, Long parent) {
    Long before = parent;
    for (int i = blocks.size() - 1; i >= 0; i--) {
      use(blocks.get(i)); // the order of use, for blocks already held
    }
    for (Long b : blocks) {
      work++;
      State s = held.get(b);
      if (s == State.LISTED || removing.remove(b)) {
        hold(b, State.LISTED);
      } else if (s == null) {
        if (listed(before)) {
          makePending(b, before);
        } else {
          makeWaiting(b, before);
        }
      }
      before = b;
    }
    for (int i = blocks.size() - 1; i >= 0; i--) {
      use(blocks.get(i));
    }
  }

  /** Holds the block in this state; a block not held yet enters at the most recent end. */
  private void hold(Long b, State state) {
    if (held.put(b, state) == null) {
      order.put(b, Boolean.TRUE);
    }
  }

  /** Moves a held block to the most recent end (a get of an access-ordered map moves it). */
  private void use(Long b) {
    work++;
    order.get(b);
  }

  private void makePending(Long b, Long parent) {
    hold(b, State.PENDING);
    link(b, parent);
    pending.add(b);
    removed.remove(b);
    placed(b);
  }

  private void makeWaiting(Long b, Long parent) {
    hold(b, State.WAITING);
    link(b, parent);
    removed.remove(b);
  }

  private void link(Long b, Long parent) {
    parentOf.put(b, parent);
    if (parent != null) {
      under.computeIfAbsent(parent, k -> new LinkedHashSet<>()).add(b);
    }
  }

  /** The block is no longer pending or waiting: it leaves its parent's children. */
  private void unlink(Long b) {
    Long parent = parentOf.remove(b);
    Set<Long> siblings = parent == null ? null : under.get(parent);
    if (siblings != null) {
      siblings.remove(b);
      if (siblings.isEmpty()) {
        under.remove(parent);
      }
    }
  }

  /** The block is listed or pending now: what waited under it is pending after it. */
  private void placed(Long block) {
    ArrayDeque<Long> ready = new ArrayDeque<>();
    ready.add(block);
    while (!ready.isEmpty()) {
      Set<Long> children = under.get(ready.poll());
      if (children == null) {
        continue;
      }
      for (Long child : children) {
        work++;
        if (held.get(child) == State.WAITING) {
          held.put(child, State.PENDING);
          pending.add(child);
          ready.add(child);
        }
      }
    }
  }

  /** The block's removal applied; {@code byModel}: the model's own, not the engine's. */
  private void noteRemoved(Long b, boolean byModel) {
    removed.remove(b);
    removed.put(b, byModel);
    if (removed.size() > capacity) {
      removed.remove(removed.keySet().iterator().next());
    }
  }

  private static boolean modelled(String tier, int cacheGroup) {
    return Tiers.GPU.equals(tier) && cacheGroup == 0;
  }

  private void evictOverSize() {
    while (order.size() > (int) size) {
      work++;
      // A fresh iterator each time: dropping a block can make others wait.
      Long b = order.keySet().iterator().next();
      evicted++;
      State s = held.get(b);
      boolean inIndex = s == State.LISTED || (s == State.PENDING && unsure.contains(b));
      drop(b);
      if (inIndex) {
        removing.add(b);
      } else {
        noteRemoved(b, true); // never stored: nothing to remove, but the model's to restore
      }
    }
  }

  /**
   * Forgets a held block: a pending one is no longer stored, and the pending blocks under it wait
   * for it again (it may come back); a waiting one leaves its parent.
   */
  private void drop(Long b) {
    State s = held.remove(b);
    order.remove(b);
    unsure.remove(b);
    if (s == State.PENDING) {
      pending.remove(b);
      unlink(b);
      demote(b);
    } else if (s == State.WAITING) {
      unlink(b);
    }
  }

  /** A block that waits again: the pending blocks under it wait too, and theirs. */
  private void demote(Long b) {
    ArrayDeque<Long> todo = new ArrayDeque<>();
    todo.add(b);
    while (!todo.isEmpty()) {
      Set<Long> children = under.get(todo.poll());
      if (children == null) {
        continue;
      }
      for (Long child : children) {
        work++;
        if (held.get(child) == State.PENDING) {
          pending.remove(child);
          held.put(child, State.WAITING);
          todo.add(child);
        }
      }
    }
  }

  /** Pending stores (runs chained parent first), then one removal, at most {@code room} blocks. */
  private List<KvEvent> changes(long room) {
    List<KvEvent> out = new ArrayList<>();
    List<Long> stores = new ArrayList<>();
    List<Long> run = new ArrayList<>();
    Long runParent = null;
    for (Long b : pending) {
      if (stores.size() >= room) {
        break;
      }
      work++;
      Long parent = parentOf.get(b);
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
    sentStores = stores;
    sentRemovals = removals;
    unsure.addAll(stores);
    return out;
  }

  private static Long last(List<Long> run) {
    return run.get(run.size() - 1);
  }

  private static void addStore(List<KvEvent> out, List<Long> run, Long parent) {
    if (!run.isEmpty()) {
      out.add(BlockStored.of(run, parent, List.of(), 0));
    }
  }
}
