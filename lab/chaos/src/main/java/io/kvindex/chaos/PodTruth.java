package io.kvindex.chaos;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.Tiers;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the {@link ChaosAuditor} knows of one pod's cache (its one rank): from the batches its
 * engine published and from looks at what it holds, when each block was held and when it went. Not
 * thread-safe: the auditor's thread only.
 */
final class PodTruth {
  /** Blocks held now: since when, continuously. */
  final Map<Long, Long> firstHeld = new HashMap<>();

  /** Every block known held: until when it may have been held (one held now: the last look). */
  final Map<Long, Long> lastHeld = new HashMap<>();

  /** Blocks known held, then gone. */
  final Set<Long> gone = new HashSet<>();

  /** Per block gone, the engine's sequence of the batch that carries (or may carry) its removal. */
  final Map<Long, Long> goneBefore = new HashMap<>();

  /** Per block, the tiers the engine's published stores and removals leave it on. */
  final Map<Long, Set<String>> tiers = new HashMap<>();

  /** Per block, the sequence of the last batch of this engine incarnation that changed it. */
  final Map<Long, Long> changedAt = new HashMap<>();

  /** The engine incarnation (process start) the batches taken in came from. */
  Instant start;

  boolean changedSince(long block, long seq) {
    Long at = changedAt.get(block);
    return at != null && at >= seq;
  }

  /** A restarted engine: sequences start again from 0; what it lost, the looks see. */
  void newIncarnation(Instant start) {
    this.start = start;
    tiers.clear();
    changedAt.clear();
  }

  /**
   * A look at what the pod holds now ({@code held}, at {@code now}), its engine started at {@code
   * start} and about to publish batch {@code before}: a block seen held was held until this look,
   * and one no longer held (dropped silently, or its removal not published yet) was held until this
   * look at the latest, its removal in the batch the engine publishes next. A block a batch
   * published after the look began changed is left to the batches; so is an engine restarted since.
   */
  void look(Instant start, long before, Set<Long> held, long now) {
    if (this.start == null) {
      this.start = start;
    } else if (start.isAfter(this.start)) {
      newIncarnation(start);
    } else if (!start.equals(this.start)) {
      return; // restarted after this look began: the next look sees the new engine
    }
    for (Map.Entry<Long, Long> e : lastHeld.entrySet()) {
      long b = e.getKey();
      if (!held.contains(b) && !changedSince(b, before) && gone.add(b)) {
        e.setValue(now);
        goneBefore.put(b, before);
        firstHeld.remove(b);
      }
    }
    for (long b : held) {
      if (changedSince(b, before)) {
        continue;
      }
      firstHeld.putIfAbsent(b, now);
      lastHeld.put(b, now);
      if (gone.remove(b)) {
        goneBefore.remove(b);
      }
    }
  }

  /**
   * Takes in a batch the engine published: when each block was stored (first held, unless held
   * already) and removed (held until the batch's publication, gone before its sequence), on any
   * tier.
   */
  void takeIn(ChaosAuditor.Published p) {
    if (start == null) {
      start = p.start();
    } else if (p.start().isAfter(start)) {
      newIncarnation(p.start());
    }
    for (KvEvent e : p.batch().events()) {
      if (e instanceof BlockStored stored) {
        String tier = Tiers.normalize(stored.medium());
        for (int i = 0; i < stored.blockHashes().size(); i++) {
          stored(stored.blockHashes().getLong(i), tier, p);
        }
      } else if (e instanceof BlockRemoved removed) {
        String tier = Tiers.normalize(removed.medium());
        for (int i = 0; i < removed.blockHashes().size(); i++) {
          long block = removed.blockHashes().getLong(i);
          Set<String> on = tiers.get(block);
          if (on != null) {
            on.remove(tier);
          }
          if (on == null || on.isEmpty()) {
            tiers.remove(block);
            gone(block, p);
          }
        }
      } else if (e instanceof AllBlocksCleared) {
        for (long block : List.copyOf(tiers.keySet())) {
          gone(block, p);
        }
        tiers.clear();
      }
    }
  }

  private void stored(long block, String tier, ChaosAuditor.Published p) {
    Set<String> on = tiers.computeIfAbsent(block, b -> new HashSet<>(2));
    on.add(tier);
    changedAt.put(block, p.seq());
    firstHeld.putIfAbsent(block, p.atNanos());
    lastHeld.merge(block, p.atNanos(), Math::max);
    if (gone.remove(block)) {
      goneBefore.remove(block);
    }
  }

  /**
   * A removal published in batch {@code p}: the block was held until then (unless a look saw it
   * gone earlier, dropped before its removal was published), and its removal is that batch's.
   */
  private void gone(long block, ChaosAuditor.Published p) {
    changedAt.put(block, p.seq());
    firstHeld.remove(block);
    if (gone.add(block)) {
      lastHeld.put(block, p.atNanos());
    }
    goneBefore.put(block, p.seq());
  }

  /**
   * How many of the prompt's leading blocks the pod may have held at or after {@code since}: each
   * last seen held (or first seen gone) then or later, or never seen when {@code unseenMayHold}.
   */
  static int mayHoldDepth(
      long[] keys, Map<Long, Long> lastSeen, long since, boolean unseenMayHold) {
    int d = 0;
    while (d < keys.length) {
      Long at = lastSeen.get(keys[d]);
      if (at == null ? !unseenMayHold : at < since) {
        break;
      }
      d++;
    }
    return d;
  }

  /**
   * How many of the prompt's leading blocks the pod must hold: each held continuously since at or
   * before {@code since}.
   */
  static int mustHoldDepth(long[] keys, Map<Long, Long> firstSeen, long since) {
    int d = 0;
    while (d < keys.length) {
      Long at = firstSeen.get(keys[d]);
      if (at == null || at > since) {
        break;
      }
      d++;
    }
    return d;
  }
}
