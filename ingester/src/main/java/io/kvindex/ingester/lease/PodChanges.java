package io.kvindex.ingester.lease;

import io.kvindex.index.StreamId;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamWorker;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a change in discovery does to the streams this replica holds: a pod gone is purged before
 * its workers are dropped, a new incarnation of its engine is restarted, any other change of its
 * spec restarts the worker. The {@link Coordinator} runs it each round. Not thread-safe: called
 * under the coordinator's round lock.
 */
final class PodChanges {
  private static final Logger log = LoggerFactory.getLogger(PodChanges.class);

  private final Shared shared;
  private final HeldStreams held;

  PodChanges(Shared shared, HeldStreams held) {
    this.shared = shared;
    this.held = held;
  }

  /**
   * Purges, then drops, the workers of pods gone from discovery (a retiring worker is dropped once
   * its purge is done, even if its pod came back meanwhile); restarts the streams of pods whose
   * engine is a new incarnation, then gives them a fresh worker; restarts the worker on any other
   * spec change.
   */
  void follow(Map<StreamId, PodSpec> desired) {
    for (StreamWorker w : List.copyOf(held.workers().values())) {
      PodSpec now = desired.get(w.id());
      if (held.holding(w) == Holding.RETIRING) {
        if (!w.status().purgePending()) {
          held.stop(w, Holding.Event.STOP);
        }
      } else if (now == null) {
        log.info("pod={} stream={}: pod left discovery; purging", w.id().pod(), w.id());
        held.retiring(w);
        w.status().requestPurge("pod_removed");
      } else if (!now.incarnation().equals(w.pod().incarnation())) {
        replaced(w, now);
      } else if (!now.equals(w.pod())) {
        log.info("pod={} stream={}: spec changed; restarting its worker", w.id().pod(), w.id());
        held.stop(w, Holding.Event.STOP);
      }
    }
  }

  /**
   * A new incarnation of the pod's engine lost the old one's cache, and its sequence numbers start
   * again at 0. Whether or not the worker has already seen that in the sequence numbers, it is told
   * the engine restarted: it purges, forgets the watermark and replays the new engine's stream from
   * 0, so nothing is lost whichever came first. Once that purge is done, a fresh worker takes the
   * new spec.
   */
  private void replaced(StreamWorker w, PodSpec now) {
    Integer before = held.restartsBefore(w);
    if (before == null) {
      log.info(
          "pod={} stream={}: new incarnation {} (was {}): its engine restarted; purging and"
              + " replaying from 0",
          w.id().pod(),
          w.id(),
          now.incarnation(),
          w.pod().incarnation());
      held.replacing(w, w.status().restarts());
      shared.metrics().podReplaced();
      w.status().requestRestart();
    } else if (w.status().restarts() > before && !w.status().purgePending()) {
      held.stop(w, Holding.Event.STOP);
    }
  }
}
