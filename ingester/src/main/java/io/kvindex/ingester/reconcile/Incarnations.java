package io.kvindex.ingester.reconcile;

import io.kvindex.index.Leases;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells each owned stream's worker when its engine restarted, from the process start time its
 * {@code /metrics} reports, even when the new engine's sequence numbers already passed the old
 * watermark. Not thread-safe: the reconciler's thread alone calls it.
 *
 * <p>Implementation notes. The incarnation a stream's entries came from is kept in Redis per stream
 * ({@link Leases#incarnation}), so a new owner compares with what the last one confirmed and no
 * other rank's owner moves it. Each decision is taken on what was read, before anything is written:
 * a stream whose record (or, once known, whose last confirmed incarnation) differs from the scraped
 * one is told to restart, and only once that restart's purge is done is the new incarnation
 * recorded, by compare-and-set from the one read. So a retried write after a lost reply cannot hide
 * the restart (the decision came first), an owner that dies before its purge leaves the old record
 * for the next one to act on (a second purge, harmless), and a record changed meanwhile by another
 * owner is read again rather than overwritten.
 */
final class Incarnations {
  private static final Logger log = LoggerFactory.getLogger(Incarnations.class);

  /** How long a record lives in Redis unless refreshed. */
  static final Duration TTL = Duration.ofDays(1);

  /** How often an unchanged record is refreshed, well within its TTL. */
  static final Duration REFRESH_EVERY = Duration.ofHours(1);

  /** What this owner knows of one stream. */
  private static final class Known {
    /** The incarnation the stream's entries came from, or null until read. */
    String confirmed;

    /** The incarnation a restart handed to the worker awaits recording, or null. */
    String restartedTo;

    /** The worker's restart count before that restart. */
    int restartsBefore;

    /** The worker's restart count at the last check. */
    int restartsSeen;

    long recordedAtNanos;
  }

  /** Whether a Redis call met a temporary error (counted by the caller). */
  interface Swallowed {
    void swallowed();
  }

  private final Leases index;
  private final Swallowed swallowed;
  private final Map<StreamWorker, Known> known = new HashMap<>();

  Incarnations(Leases index, Swallowed swallowed) {
    this.index = index;
    this.swallowed = swallowed;
  }

  /** Forgets the workers that are gone. */
  void retain(Set<StreamWorker> live) {
    known.keySet().retainAll(live);
  }

  /** The engine behind {@code w} reports {@code start} as its process start time. */
  void check(StreamWorker w, String start, long nowNanos) {
    Known k = known.computeIfAbsent(w, x -> fresh(x.status()));
    try {
      if (k.restartedTo != null) {
        recordOnceRestarted(w, k, start, nowNanos);
      } else if (k.confirmed == null) {
        firstLook(w, k, start, nowNanos);
      } else if (!k.confirmed.equals(start)) {
        restart(w, k, start);
      } else if (nowNanos - k.recordedAtNanos > REFRESH_EVERY.toNanos()) {
        record(w, k, start, start, nowNanos);
      }
    } catch (RedisUnavailableException e) {
      swallowed.swallowed(); // tried again at the next round, from what is known
    }
    k.restartsSeen = w.status().restarts();
  }

  private static Known fresh(StreamStatus status) {
    Known k = new Known();
    k.restartsSeen = status.restarts();
    return k;
  }

  /** A new owner: the record says which incarnation the stream's entries came from. */
  private void firstLook(StreamWorker w, Known k, String start, long nowNanos) {
    String recorded = index.incarnation(w.id()).orElse(null);
    if (recorded == null) {
      record(w, k, null, start, nowNanos); // nothing to compare with: from now on
    } else if (recorded.equals(start)) {
      k.confirmed = start;
      k.recordedAtNanos = nowNanos - REFRESH_EVERY.toNanos() - 1; // refresh at the next round
    } else {
      k.confirmed = recorded;
      restart(w, k, start);
    }
  }

  private void restart(StreamWorker w, Known k, String start) {
    log.info(
        "pod={} stream={}: its engine's process start time is {}, its entries came from {}",
        w.id().pod(),
        w.id(),
        start,
        k.confirmed);
    k.restartsBefore = k.restartsSeen;
    if (w.status().restarts() == k.restartsSeen) {
      w.status().requestRestart(); // not already seen through its sequence numbers
    }
    k.restartedTo = start;
  }

  /** The restart's purge done, the stream's entries come from {@code start} on. */
  private void recordOnceRestarted(StreamWorker w, Known k, String start, long nowNanos) {
    if (!start.equals(k.restartedTo)) {
      k.restartedTo = start; // restarted again meanwhile: the same purge covers both
    }
    StreamStatus s = w.status();
    if (s.restarts() > k.restartsBefore && !s.purgePending()) {
      record(w, k, k.confirmed, start, nowNanos);
      k.restartedTo = null;
    }
  }

  private void record(StreamWorker w, Known k, String expected, String start, long nowNanos) {
    if (index.recordIncarnation(w.id(), expected, start, TTL)) {
      k.confirmed = start;
      k.recordedAtNanos = nowNanos;
    } else {
      k.confirmed = null; // another owner recorded another one: read it again next round
    }
  }
}
