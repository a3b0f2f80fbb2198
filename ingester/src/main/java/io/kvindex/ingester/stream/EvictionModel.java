package io.kvindex.ingester.stream;

import io.kvindex.common.Check;
import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.event.Tiers;
import io.kvindex.index.Touch;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The GPU cache of an engine that does not publish all of its evictions, as the index can infer it:
 * the blocks of one stream in the order the engine last used them, no more than the engine's
 * capacity. What it evicts, the index removes; what an observed request shows the engine still
 * holds, the index lists again. Pure: the stream's worker feeds it what it applies and what routers
 * observed. Not thread-safe.
 *
 * <p>Implementation notes. vLLM frees a finished request's blocks last block first to the tail of
 * its free queue and evicts from the head, so a prompt's tail goes before its head and a block used
 * again (a prefix hit) moves to the tail. The model is that order: a store enters its blocks last
 * first, and a touch (an observed request, {@link Touch}) moves the prompt's blocks to the most
 * recent end, last first, restoring those the model had dropped (the engine just served them, so it
 * holds them). Once past its size it evicts the least recently used. Only full-attention GPU blocks
 * (cache group 0) are modelled; other tiers and groups pass through as published.
 *
 * <p>Its size starts at the engine's capacity ({@code num_gpu_blocks}), but an engine holds fewer
 * blocks than it has: a request's last, partly filled block has no hash, and running requests'
 * blocks cannot be evicted. Each touch carries the error of the index's prediction for its request
 * (what the model held, against what the engine reported), so the size follows the engine's: an
 * over-prediction shrinks it by the error, an under-prediction grows it, within [{@code capacity /
 * 16}, {@code capacity}] and by at most {@code capacity / 16} a touch.
 *
 * <p>A model starts from what the engine's ring holds ({@link #prime}), without removing what it
 * drops while doing so: the ring has no hits in it, so the prompts used most would be the first to
 * go, and a prompt the index stops listing is a prompt routed elsewhere. Blocks the ring predates
 * stay listed until the engine stores them again or the model evicts them after a touch.
 *
 * <p>A block stored under a parent the index does not list (the model evicted the parent while the
 * engine kept it; or restored it, but the store has not gone out yet, since the model's stores
 * follow the call's events) would have no place in the index's chain, and lookups of the whole
 * group fall back to block fields while any such block is listed. So the engine's store is held
 * back (the block is held, not listed) until its parent is listed: a touch of the prompt restores
 * the chain from block 0, and the held-back blocks follow it.
 *
 * <p>Its changes reach the index with the stream's next apply call, after the batch's own events:
 * stores first (each after its parent, so that the index can place it in its chain), then one
 * removal. They stay pending until a call that carried them applied, so a retried call carries them
 * again; a store of the engine's own overrides a pending removal of the same block and the other
 * way round. A purge of the stream ({@link #clear}) drops the model with the index's entries.
 */
final class EvictionModel {
  /** Least recently used first; the value is unused. */
  private final LinkedHashMap<Long, Boolean> held = new LinkedHashMap<>(1024, 0.75f, true);

  /** Blocks the index still lists that the model evicted, in eviction order. */
  private final Set<Long> toRemove = new LinkedHashSet<>();

  /** Blocks the model restored that the index does not list, each with its parent, chain order. */
  private final Map<Long, Long> toStore = new LinkedHashMap<>();

  /** Held blocks the engine stored under a parent the index does not list, with it: held back. */
  private final Map<Long, Long> orphans = new LinkedHashMap<>();

  /** The engine's stores held back from the calls not yet applied, by identity. */
  private final Set<KvEvent> heldBack = Collections.newSetFromMap(new IdentityHashMap<>());

  private final int capacity;
  private final double smallest;
  private final double largestStep;
  private double size;
  private long takenThrough = -1;
  private long evicted;
  private long restored;
  private List<Long> sentStores = List.of();
  private List<Long> sentRemovals = List.of();

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
    return held.size();
  }

  /** Blocks evicted so far (whether or not the removal has reached the index yet). */
  long evicted() {
    return evicted;
  }

  /** Blocks restored by touches so far. */
  long restored() {
    return restored;
  }

  /** Whether the model holds the block now. */
  boolean holds(long block) {
    return held.containsKey(block);
  }

  /** Whether the index lists the block, or will once the pending changes are applied. */
  boolean listed(long block) {
    return held.containsKey(block) && !orphans.containsKey(block);
  }

  /**
   * Whether the index lists the block now, as of the calls applied and the events before this one
   * in the call being made: the model's own pending stores go after the call's events.
   */
  private boolean placed(long block) {
    return listed(block) && !toStore.containsKey(block);
  }

  /**
   * Takes in the stream's history up to {@code throughSeq}, which the index has applied already
   * (what the engine's ring still holds, oldest first): the model learns the order of use from it,
   * and what it drops on the way is not removed. Entries older than the ring stay in the index
   * until the engine stores them again (a request found them gone) or the model evicts them. The
   * history's blocks are taken as listed, parents the ring predates included.
   */
  void prime(List<Batch> history, long throughSeq) {
    for (Batch b : history) {
      if (b.seq() > takenThrough && b.seq() <= throughSeq) {
        take(b.events().events(), false);
        takenThrough = b.seq();
      }
    }
    toRemove.clear();
    takenThrough = Math.max(takenThrough, throughSeq);
  }

  /** The index lost the stream's entries (a purge): the model starts again from nothing. */
  void clear() {
    held.clear();
    toRemove.clear();
    toStore.clear();
    orphans.clear();
    heldBack.clear();
    takenThrough = -1;
  }

  /**
   * The events to apply for {@code parts} (consecutive batches, as one call): their own but those
   * held back, then the model's pending changes, at most {@code room} of them (a run of batches
   * must fit one call; a single batch may take them all). The parts not taken in yet are taken in
   * first; call {@link #applied} once the call applied, {@link #passed} if the index had it.
   */
  KvEventBatch eventsToApply(List<Batch> parts, KvEventBatch merged, long room) {
    for (Batch part : parts) {
      if (part.seq() > takenThrough) {
        take(part.events().events(), true);
        takenThrough = part.seq();
      }
    }
    List<KvEvent> changes = changes(room);
    if (changes.isEmpty() && heldBack.isEmpty()) {
      return merged;
    }
    List<KvEvent> events = new ArrayList<>(merged.events().size() + changes.size());
    for (KvEvent e : merged.events()) {
      if (!heldBack.contains(e)) {
        events.add(e);
      }
    }
    events.addAll(changes);
    return KvEventBatch.of(merged.timestamp(), events, merged.dataParallelRank());
  }

  /**
   * What an applied call carried of the model's changes.
   *
   * @param evicted blocks the index removed because the model evicted them
   * @param restored blocks the index lists again because an observed request showed them held, or
   *     once their parent was
   */
  record Carried(int evicted, int restored) {}

  /** The last call of {@link #eventsToApply} applied: what it carried is no longer pending. */
  Carried applied() {
    sentStores.forEach(toStore::remove);
    sentRemovals.forEach(toRemove::remove);
    Carried carried = new Carried(sentRemovals.size(), sentStores.size());
    sentStores = List.of();
    sentRemovals = List.of();
    heldBack.clear();
    return carried;
  }

  /** The index had the last call's batches already (a lost reply): nothing of it applied now. */
  void passed() {
    heldBack.clear();
  }

  /**
   * An observed request on this engine: its prompt's blocks move to the most recent end, last
   * first. When the request was credited to this rank ({@code credited}), blocks the index does not
   * list are restored, parent first (the engine just served them), and the prediction's error moves
   * the model's size.
   */
  void touch(long[] blocks, boolean credited, int errorBlocks) {
    if (credited) {
      double step = Math.max(-largestStep, Math.min(largestStep, errorBlocks));
      size = Math.max(smallest, Math.min(capacity, size - step));
      for (int i = 0; i < blocks.length; i++) {
        if (!listed(blocks[i])) {
          orphans.remove(blocks[i]);
          toStore.put(blocks[i], i == 0 ? null : blocks[i - 1]);
          toRemove.remove(blocks[i]);
          held.put(blocks[i], Boolean.TRUE);
          restored++;
        }
      }
      adoptOrphans();
    }
    for (int i = blocks.length - 1; i >= 0; i--) {
      held.get(blocks[i]); // moves it to the most recent end, when held
    }
    evictOverCapacity();
  }

  /** Takes in the engine's events; with {@code holdBack}, stores the index could not place wait. */
  private void take(List<KvEvent> events, boolean holdBack) {
    for (KvEvent event : events) {
      if (event instanceof AllBlocksCleared) {
        held.clear();
        toRemove.clear();
        toStore.clear();
        orphans.clear();
      } else if (event instanceof BlockStored s && modelled(s.tier(), s.cacheGroup())) {
        stored(s, holdBack && s.parentBlockHash() != null && !placed(s.parentBlockHash()));
      } else if (event instanceof BlockRemoved r && modelled(r.tier(), r.cacheGroup())) {
        for (Long block : r.blockHashes()) {
          held.remove(block);
          toRemove.remove(block);
          orphans.remove(block);
          dropPendingStore(block);
        }
      }
    }
    adoptOrphans();
  }

  private void stored(BlockStored s, boolean orphaned) {
    List<Long> blocks = s.blockHashes();
    if (orphaned) {
      heldBack.add(s);
      Long parent = s.parentBlockHash();
      for (Long block : blocks) {
        if (!listed(block)) {
          orphans.put(block, parent);
        }
        parent = block;
      }
    }
    for (int i = blocks.size() - 1; i >= 0; i--) {
      Long block = blocks.get(i);
      held.put(block, Boolean.TRUE);
      toRemove.remove(block);
      if (!orphaned) {
        toStore.remove(block);
        orphans.remove(block);
      }
    }
    evictOverCapacity();
  }

  /** Held-back blocks whose parent is listed now (or about to be) are restored under it. */
  private void adoptOrphans() {
    boolean adopted = true;
    while (adopted && !orphans.isEmpty()) {
      adopted = false;
      Iterator<Map.Entry<Long, Long>> it = orphans.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<Long, Long> e = it.next();
        if (listed(e.getValue())) {
          it.remove();
          toStore.put(e.getKey(), e.getValue());
          adopted = true;
        }
      }
    }
  }

  private static boolean modelled(String tier, int cacheGroup) {
    return Tiers.GPU.equals(tier) && cacheGroup == 0;
  }

  private void evictOverCapacity() {
    while (held.size() > (int) size) {
      // A fresh iterator each time: dropping a pending restore drops those chained after it too.
      Long block = held.keySet().iterator().next();
      held.remove(block);
      evicted++;
      if (orphans.remove(block) == null && !dropPendingStore(block)) {
        toRemove.add(block);
      }
    }
  }

  /**
   * Drops a restore the index has not seen, and the restores chained after it (they would have no
   * place in the chain). Returns whether the block was pending.
   */
  private boolean dropPendingStore(Long block) {
    if (!toStore.containsKey(block)) {
      return false;
    }
    toStore.remove(block);
    List<Long> orphans = new ArrayList<>();
    for (Map.Entry<Long, Long> e : toStore.entrySet()) {
      if (block.equals(e.getValue())) {
        orphans.add(e.getKey());
      }
    }
    for (Long orphan : orphans) {
      held.remove(orphan);
      dropPendingStore(orphan);
    }
    return true;
  }

  /** Pending stores (runs chained parent first), then one removal, at most {@code room} blocks. */
  private List<KvEvent> changes(long room) {
    List<KvEvent> out = new ArrayList<>();
    List<Long> stores = new ArrayList<>();
    List<Long> run = new ArrayList<>();
    Long runParent = null;
    for (Map.Entry<Long, Long> e : toStore.entrySet()) {
      if (stores.size() >= room) {
        break;
      }
      boolean continues = !run.isEmpty() && e.getValue() != null && e.getValue().equals(last(run));
      if (!continues) {
        addStore(out, run, runParent);
        run = new ArrayList<>();
        runParent = e.getValue();
      }
      run.add(e.getKey());
      stores.add(e.getKey());
    }
    addStore(out, run, runParent);
    List<Long> removals = new ArrayList<>();
    for (Long block : toRemove) {
      if (stores.size() + removals.size() >= room) {
        break;
      }
      removals.add(block);
    }
    if (!removals.isEmpty()) {
      out.add(new BlockRemoved(removals, Tiers.GPU, null));
    }
    sentStores = stores;
    sentRemovals = removals;
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
