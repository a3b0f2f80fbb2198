package io.kvindex.ingester;

import io.kvindex.index.GcResult;
import io.kvindex.index.Maintenance;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.redis.RedisUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ingester's garbage-collection rounds: per index group, bounded cleanup steps (one gc.lua call
 * each, {@link PrefixIndexBuilder#DEFAULT_GC_BUDGET} fields) until the group is clean or the
 * round's steps are spent, then one step of forgetting departed pods. A round reports each group's
 * holder slots ({@code kvindex_ingester_slots_available}, {@code _slots_dead}).
 *
 * <p>A retired slot is reused only after a whole pass over the group's blocks hash that began after
 * its death, so when streams purge faster than passes end (resets, restarts, churn) retired slots
 * pile up, and at 0 available a batch that needs a slot is refused. A round therefore takes more
 * steps as the available slots fall below {@value #RESERVE_LOW}, in inverse proportion, up to
 * {@value #MAX_SPEEDUP} times {@code gc-max-steps} ({@link #stepsFor}); each step stays as small as
 * ever, so no call holds Redis longer, there are only more of them. Thread-safe: the ingester runs
 * one round at a time.
 */
final class GarbageCollector {
  private static final Logger log = LoggerFactory.getLogger(GarbageCollector.class);

  /** Available holder slots below which a round takes more steps. */
  static final int RESERVE_LOW = 1024;

  /**
   * The most a round's steps grow (reached at {@code RESERVE_LOW / MAX_SPEEDUP} slots and less).
   */
  static final int MAX_SPEEDUP = 16;

  private final Shared shared;

  GarbageCollector(Shared shared) {
    this.shared = shared;
  }

  /**
   * The steps a round may take in a group with {@code slotsAvailable} holder slots left (-1 when
   * unknown): {@code baseSteps} while at least {@value #RESERVE_LOW} are, else {@code baseSteps}
   * times {@code RESERVE_LOW / slotsAvailable} rounded up, at most {@value #MAX_SPEEDUP} times.
   */
  static int stepsFor(int baseSteps, int slotsAvailable) {
    if (slotsAvailable < 0 || slotsAvailable >= RESERVE_LOW) {
      return baseSteps;
    }
    int left = Math.max(1, slotsAvailable);
    int speedup = Math.min(MAX_SPEEDUP, (RESERVE_LOW + left - 1) / left);
    return (int) Math.min(Integer.MAX_VALUE, (long) baseSteps * speedup);
  }

  /** One round over every group. */
  void round() {
    try {
      shared.faults().beforeWrite();
      Maintenance index = shared.index();
      int budget = PrefixIndexBuilder.DEFAULT_GC_BUDGET;
      for (int g = 0; g < index.groups(); g++) {
        collect(index, g, budget);
        index.sweepDeparted(g, budget);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RedisUnavailableException e) {
      shared.metrics().swallowed(Operation.GC);
    } catch (RuntimeException e) {
      if (Thread.currentThread().isInterrupted()) {
        return; // stopping: the wait for Redis was cut short, nothing failed
      }
      shared.metrics().realError(Operation.GC);
      log.error("garbage collection step failed", e);
    }
  }

  private void collect(Maintenance index, int group, int budget) {
    int base = shared.config().gcMaxSteps();
    GcResult step = index.collectGarbage(group, budget);
    int steps = 1;
    while (!step.done() && steps < stepsFor(base, step.slotsAvailable())) {
      step = index.collectGarbage(group, budget);
      steps++;
    }
    shared.metrics().gcSteps(steps);
    if (step.slotsAvailable() >= 0) {
      shared.metrics().holderSlots(group, step.slotsAvailable(), step.slotsDead());
    }
  }
}
