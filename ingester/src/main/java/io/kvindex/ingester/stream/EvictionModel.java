package io.kvindex.ingester.stream;

import static io.kvindex.ingester.stream.BlockState.LISTED;
import static io.kvindex.ingester.stream.BlockState.PENDING;
import static io.kvindex.ingester.stream.BlockState.REMOVED_BY_ENGINE;
import static io.kvindex.ingester.stream.BlockState.REMOVED_BY_MODEL;
import static io.kvindex.ingester.stream.BlockState.REMOVING;

import io.kvindex.common.Check;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.Touch;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
 * <p>Its size ({@link ModelSize}) starts at the engine's capacity ({@code num_gpu_blocks}), but an
 * engine holds fewer blocks than it has: a request's last, partly filled block has no hash, and
 * running requests' blocks cannot be evicted. Each read of touches moves the size by the mean error
 * of the index's predictions for them (what the model had listed, against what the engine
 * reported): down when over-predicted, up when under.
 *
 * <p>Each block the model knows is in one {@link BlockState}: held as listed, pending or waiting;
 * removing until a call carrying its removal applied; or removed (the latest {@code capacity} of
 * them). {@link ModelBlocks} keeps the states and makes every transition. A store of the engine's
 * under a parent that is pending, waiting or removed is held back from the call, and its blocks
 * wait for the parent; a parent the model does not know is taken as listed (the ring predates it,
 * or another pod holds it). A touch restores its prompt's chain from block 0 ({@link Restores}),
 * which places what waited under it.
 *
 * <p>Changes reach the index with the stream's next apply call ({@link ModelCall}), after the
 * call's own events: pending stores first (a chain's parent before its children), then one removal;
 * a run of batches carries what fits its chunk. A store sent in a call that did not settle may have
 * applied: evicted meanwhile, it is removed. A purge of the stream ({@link #clear}) drops the model
 * with the index's entries.
 */
final class EvictionModel {
  /** Every block the model knows, in its state, and the transitions between them. */
  private final ModelBlocks blocks;

  /** Blocks sent as stores in calls that have not settled: they may be in the index. */
  private final Set<Long> unsure = new HashSet<>();

  /** The apply call the model's changes ride on, and the engine's stores held back from it. */
  private final ModelCall call = new ModelCall();

  /** What observed requests list again of the removed blocks. */
  private final Restores restores;

  private final int capacity;
  private final ModelSize size;
  private long takenThrough = -1;
  private long evicted;
  private long work;

  /** A model of an engine that caches {@code capacity} blocks. */
  EvictionModel(int capacity) {
    this.capacity = Check.atLeast(capacity, 1, "capacity");
    this.blocks = new ModelBlocks(capacity);
    this.restores = new Restores(blocks, capacity);
    this.size = new ModelSize(capacity);
  }

  /** The engine's capacity in blocks. */
  int capacity() {
    return capacity;
  }

  /** How many blocks the model keeps now: its estimate of what the engine holds when full. */
  int size() {
    return size.blocks();
  }

  /** Blocks held now, as far as the model knows. */
  int held() {
    return blocks.heldCount();
  }

  /** Blocks evicted so far (whether or not the removal has reached the index yet). */
  long evicted() {
    return evicted;
  }

  /** Blocks restored by touches so far. */
  long restored() {
    return restores.restored();
  }

  /**
   * Blocks visited so far, in every structure the model keeps: its cost, which tests and the
   * benchmark compare with the blocks it took in.
   */
  long work() {
    return work + blocks.work() + restores.work();
  }

  /** Whether the model holds the block now. */
  boolean holds(long block) {
    return blocks.held(block);
  }

  /** Whether the index lists the block, or will once the pending changes are applied. */
  boolean listed(long block) {
    BlockState s = blocks.get(block);
    return s != null && s.listedOrPending();
  }

  /** Whether a call is built and has not settled: its events must be sent again as they are. */
  boolean callInFlight() {
    return call.inFlight();
  }

  /**
   * What the stream's next owner needs to go on where this model is: its size, and the removals it
   * decided that the index has not applied (at most {@link InferenceHandover#MAX_REMOVALS}, the
   * oldest first).
   */
  InferenceHandover handover() {
    long[] removals =
        blocks.removing().stream()
            .limit(InferenceHandover.MAX_REMOVALS)
            .mapToLong(Long::longValue)
            .toArray();
    return new InferenceHandover(Math.max(1, size.blocks()), removals);
  }

  /**
   * Goes on from a former owner's model: its size (set before {@link #prime}, so that the ring is
   * taken in at the size the engine was found to hold), then, once primed, its removals not applied
   * (evicted here too, whatever the ring showed, and removed with the next call).
   */
  void resize(int sizeBlocks) {
    size.set(sizeBlocks);
  }

  /** The former owner's removals not applied: see {@link #resize}. */
  void evict(long[] removals) {
    for (long block : removals) {
      work++;
      Long b = block;
      BlockState s = blocks.get(b);
      if (s != null && s.removed()) {
        continue; // the index does not list it
      }
      // one the model does not hold may be listed still: removing it is safe
      boolean inIndex = s == null || s == LISTED || s == REMOVING;
      drop(b, inIndex ? REMOVING : REMOVED_BY_MODEL);
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
    // dropped while priming: never listed by it
    blocks.forget(s -> s == REMOVING || s == REMOVED_BY_MODEL);
    evicted = evictedBefore;
    takenThrough = Math.max(takenThrough, throughSeq);
  }

  /** The index lost the stream's entries (a purge): the model starts again from nothing. */
  void clear() {
    blocks.forget(s -> true);
    unsure.clear();
    call.clear();
    takenThrough = -1;
  }

  /**
   * The events to apply for {@code parts} (consecutive batches, as one call): their own but those
   * held back, then the model's changes, at most {@code room} blocks of them (a run of batches must
   * fit one call; a single batch may take them all). Parts not taken in yet are taken in first. The
   * same range gets the same events until the call settles ({@link #applied} or {@link #passed}).
   */
  KvEventBatch eventsToApply(List<Batch> parts, long room) {
    KvEventBatch built = call.builtFor(parts);
    if (built != null) {
      return built;
    }
    for (Batch part : parts) {
      if (part.seq() > takenThrough) {
        take(part.seq(), part.events(), true);
        takenThrough = part.seq();
      }
    }
    ModelBlocks.Changes changes = blocks.changes(room);
    unsure.addAll(changes.stores());
    return call.build(parts, changes);
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
    for (Long b : call.stores()) {
      work++;
      unsure.remove(b);
      if (blocks.is(b, PENDING)) {
        blocks.set(b, LISTED);
        blocks.placed(b);
      }
    }
    for (Long b : call.removals()) {
      work++;
      if (blocks.is(b, REMOVING)) {
        blocks.set(b, REMOVED_BY_MODEL);
      }
    }
    Carried carried = new Carried(call.removals().size(), call.stores().size());
    call.settled(seq);
    return carried;
  }

  /**
   * The index had the last call's batches already, or not the one before them: through {@code seq}.
   */
  void passed(long watermark) {
    call.settled(watermark);
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
        restores.restore(t, call.removals());
        errors += t.errorBlocks();
        credited++;
      }
      long[] keys = t.blockKeys();
      for (int i = Restores.cachedDepth(t) - 1; i >= 0; i--) {
        use(keys[i]);
      }
    }
    if (credited > 0) {
      size.corrected(errors, credited);
    }
    evictOverSize();
  }

  /** Takes in the engine's events; with {@code holdBack}, stores the index could not place wait. */
  private void take(long seq, KvEventBatch batch, boolean holdBack) {
    List<KvEvent> events = batch.events();
    long atMillis = batch.timestamp() > 0 ? (long) (batch.timestamp() * 1000) : Long.MAX_VALUE;
    for (int i = 0; i < events.size(); i++) {
      KvEvent event = events.get(i);
      if (event instanceof AllBlocksCleared) {
        // the engine holds nothing now: every held block, and every removal in progress, is gone
        blocks.forget(s -> s.held() || s == REMOVING);
      } else if (event instanceof BlockStored s && modelled(s.tier(), s.cacheGroup())) {
        Long parent = s.parentBlockHash();
        if (parent != null) {
          usedAsParent(parent);
        }
        if (holdBack && parent != null && !placedInIndex(parent)) {
          call.holdBack(seq, i);
          storedUnplaced(s.blockHashes(), parent);
        } else {
          storedPlaced(s.blockHashes());
        }
        evictOverSize();
      } else if (event instanceof BlockRemoved r && modelled(r.tier(), r.cacheGroup())) {
        for (Long b : r.blockHashes()) {
          work++;
          drop(b, REMOVED_BY_ENGINE);
          restores.published(b, atMillis);
        }
      }
    }
  }

  /** A store's parent: the engine used it just now. */
  private void usedAsParent(Long parent) {
    if (blocks.is(parent, REMOVING)) {
      blocks.set(parent, LISTED); // the index still lists it: keep it
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
    BlockState s = blocks.get(parent);
    return s == null || s == LISTED || s == REMOVING;
  }

  /** The engine's store, applied as it is: its blocks are listed. */
  private void storedPlaced(List<Long> stored) {
    for (int i = stored.size() - 1; i >= 0; i--) {
      work++;
      Long b = stored.get(i);
      unsure.remove(b);
      blocks.set(b, LISTED);
      use(b);
    }
    for (Long b : stored) {
      blocks.placed(b);
    }
  }

  /**
   * The engine's store, held back: its blocks are pending after their parent when it is listed or
   * pending, else they wait for it; those the index lists stay listed.
   */
  private void storedUnplaced(List<Long> stored, Long parent) {
    Long before = parent;
    for (int i = stored.size() - 1; i >= 0; i--) {
      use(stored.get(i)); // the order of use, for blocks already held
    }
    for (Long b : stored) {
      work++;
      BlockState s = blocks.get(b);
      if (s == LISTED || s == REMOVING) {
        blocks.set(b, LISTED);
      } else if (s == null || s.removed()) {
        if (listed(before)) {
          blocks.pend(b, before);
        } else {
          blocks.waitFor(b, before);
        }
      }
      before = b;
    }
    for (int i = stored.size() - 1; i >= 0; i--) {
      use(stored.get(i));
    }
  }

  /** Moves a held block to the most recent end. */
  private void use(Long b) {
    work++;
    blocks.use(b);
  }

  private static boolean modelled(String tier, int cacheGroup) {
    return Tiers.GPU.equals(tier) && cacheGroup == 0;
  }

  private void evictOverSize() {
    while (blocks.heldCount() > size.blocks()) {
      work++;
      // The least recently used afresh each time: dropping a block can make others wait.
      Long b = blocks.leastRecentlyUsed();
      evicted++;
      BlockState s = blocks.get(b);
      boolean inIndex = s == LISTED || (s == PENDING && unsure.contains(b));
      // one never stored has nothing to remove, but is the model's to restore
      drop(b, inIndex ? REMOVING : REMOVED_BY_MODEL);
    }
  }

  /** The engine no longer holds the block: {@code to} says what the index has of it. */
  private void drop(Long b, BlockState to) {
    BlockState was = blocks.drop(b, to);
    if (was != null && was.held()) {
      unsure.remove(b);
    }
  }
}
