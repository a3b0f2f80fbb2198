package io.kvindex.ingester.reconcile;

import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.lease.Coordinator;
import io.kvindex.ingester.reconcile.MetricsScraper.Failed;
import io.kvindex.ingester.reconcile.MetricsScraper.Page;
import io.kvindex.ingester.reconcile.MetricsScraper.Result;
import io.kvindex.ingester.stream.EngineCapacity;
import io.kvindex.ingester.stream.StreamWorker;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The level-triggered backstop for lossy events: scrapes each owned pod's {@code /metrics} and asks
 * a stream's worker to purge when its engine sleeps or the pod has been unreachable past a bound;
 * it also tells each worker its engine's KV-cache capacity, which inferred evictions need. Driven
 * by one scheduled thread ({@link #tick()}); {@link #reachable} may be called from any thread.
 *
 * <p>A round scrapes every owned pod at once ({@link MetricsScraper}: each page within the scrape
 * timeout and the page limit) and takes each page up as it arrives, so a slow or huge page delays
 * no other pod's sleep, restart or reachability, and a round lasts at most the scrape timeout.
 *
 * <p>A condition asks for one purge per episode (asleep, unreachable) and per worker; the worker
 * keeps the purge pending until it succeeds, so a temporary Redis error never latches it as done.
 * When the condition clears, the next episode purges again.
 */
public final class Reconciler {
  private static final Logger log = LoggerFactory.getLogger(Reconciler.class);

  private final Shared shared;
  private final Coordinator coordinator;
  private final MetricsScraper scraper;
  private final Set<String> warnedTooLarge = new HashSet<>();
  private final Map<String, Long> unreachableSince = new ConcurrentHashMap<>();
  private final Map<StreamWorker, String> purgedFor = new ConcurrentHashMap<>();
  private final Set<StreamWorker> channelLost = ConcurrentHashMap.newKeySet();
  private final Incarnations incarnations;
  private final Map<io.kvindex.index.StreamId, Boolean> asleep = new ConcurrentHashMap<>();

  public Reconciler(Shared shared, Coordinator coordinator) {
    this.shared = shared;
    this.coordinator = coordinator;
    this.scraper =
        new MetricsScraper(shared.config().scrapeTimeout(), shared.config().maxScrapeBytes());
    this.incarnations =
        new Incarnations(shared.index(), () -> shared.metrics().swallowed(Operation.INCARNATION));
  }

  /** Stops the scrapes' threads. */
  public void close() {
    scraper.close();
  }

  /** False once a pod's metrics endpoint has failed for longer than the unreachable bound. */
  public boolean reachable(String pod) {
    Long since = unreachableSince.get(pod);
    return since == null || shared.nanos() - since < shared.config().unreachableAfter().toNanos();
  }

  /**
   * The index lost what it held, or may have: purges it had acknowledged (a sleeping pod's) may be
   * gone, so every condition that still holds purges again at the next round.
   */
  public void indexReset() {
    purgedFor.clear();
    channelLost.clear();
  }

  /** Whether a stream's engine said it sleeps at the last scrape of its pod. */
  public boolean asleep(io.kvindex.index.StreamId stream) {
    return asleep.getOrDefault(stream, false);
  }

  /** One reconcile round; never throws. */
  public void tick() {
    try {
      shared.faults().beforeWrite();
      Map<String, List<StreamWorker>> byPod =
          coordinator.workers().values().stream().collect(Collectors.groupingBy(w -> w.id().pod()));
      Set<StreamWorker> live = Set.copyOf(coordinator.workers().values());
      purgedFor.keySet().retainAll(live);
      incarnations.retain(live);
      checkChannels(live);
      scrapeAll(byPod);
      unreachableSince.keySet().retainAll(byPod.keySet());
      asleep.keySet().removeIf(s -> !byPod.containsKey(s.pod()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (Thread.currentThread().isInterrupted()) {
        return; // stopping: the wait for Redis was cut short, nothing failed
      }
      shared.metrics().realError(Operation.RECONCILE);
      log.error("reconcile round failed", e);
    }
  }

  /**
   * Scrapes every pod that has a metrics URL, all at once, and takes each page up as it arrives;
   * each scrape ends by the scrape timeout, so the round does too.
   */
  private void scrapeAll(Map<String, List<StreamWorker>> byPod) throws InterruptedException {
    LinkedBlockingQueue<Map.Entry<String, Result>> arrived = new LinkedBlockingQueue<>();
    int pending = 0;
    for (Map.Entry<String, List<StreamWorker>> e : byPod.entrySet()) {
      String url = e.getValue().get(0).pod().metricsUrl();
      if (url != null) {
        String pod = e.getKey();
        scraper.scrape(url).thenAccept(r -> arrived.add(Map.entry(pod, r)));
        pending++;
      }
    }
    // Each scrape completes by its deadline; the margin only covers the callback's delivery.
    long end = shared.nanos() + shared.config().scrapeTimeout().toNanos() + 1_000_000_000L;
    for (; pending > 0; pending--) {
      Map.Entry<String, Result> r =
          arrived.poll(Math.max(0, end - shared.nanos()), TimeUnit.NANOSECONDS);
      if (r == null) {
        return; // not expected: the scrapes left are taken as failed at the next round
      }
      reconcile(r.getKey(), byPod.get(r.getKey()), r.getValue());
    }
  }

  private void reconcile(String pod, List<StreamWorker> workers, Result scraped) {
    shared.metrics().scrape(scraped.outcome());
    if (scraped instanceof Failed f) {
      if (f.outcome().equals("too_large") && warnedTooLarge.add(pod)) {
        log.warn("pod={}: its /metrics cannot be read: {}", pod, f.why());
      }
      unreachableSince.putIfAbsent(pod, shared.nanos());
      if (!reachable(pod)) {
        workers.forEach(w -> ensurePurged(w, "unreachable"));
      }
      return;
    }
    warnedTooLarge.remove(pod);
    String page = ((Page) scraped).text();
    unreachableSince.remove(pod);
    String start = EngineMetrics.processStart(page);
    if (start != null) {
      workers.forEach(w -> incarnations.check(w, start, shared.nanos()));
    }
    Map<Integer, Boolean> sleeping = EngineMetrics.asleepByEngine(page);
    Map<Integer, EngineCapacity> capacity = EngineMetrics.capacityByEngine(page);
    for (StreamWorker w : workers) {
      w.status().capacity(capacity.getOrDefault(w.id().dpRank(), EngineCapacity.UNKNOWN));
      // Level-triggered: the stream holds nothing while its engine says it sleeps.
      boolean now = sleeping.getOrDefault(w.id().dpRank(), false);
      asleep.put(w.id(), now);
      w.status().engineAsleep(now);
      purgedFor.remove(w);
    }
  }

  /**
   * Purges, once per episode, each stream whose event channel has shown no sign of its engine (no
   * batch, no connection answering heartbeats, no replay answer) for the unreachable bound: its
   * entries may be stale, and nothing would tell (one of several ranks going silent keeps its pod
   * live, and a pod without {@code /metrics} has nothing else).
   */
  private void checkChannels(Set<StreamWorker> live) {
    channelLost.retainAll(live);
    long bound = shared.config().unreachableAfter().toNanos();
    for (StreamWorker w : live) {
      long silentNanos = w.status().silentNanos();
      if (silentNanos <= bound) {
        channelLost.remove(w);
      } else if (channelLost.add(w)) {
        log.info(
            "pod={} stream={}: no batch, connection or replay answer for {} ms; purging",
            w.id().pod(),
            w.id(),
            silentNanos / 1_000_000);
        w.status().requestPurge("event_channel_lost");
      }
    }
  }

  private void ensurePurged(StreamWorker w, String reason) {
    if (!reason.equals(purgedFor.get(w))) {
      purgedFor.put(w, reason);
      log.info("pod={} stream={}: {}; purging", w.id().pod(), w.id(), reason);
      w.status().requestPurge(reason);
    }
  }
}
