package io.kvindex.ingester.reconcile;

import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.lease.Coordinator;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisUnavailableException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The level-triggered backstop for lossy events: scrapes each owned pod's {@code /metrics} and asks
 * a stream's worker to purge when its engine sleeps or the pod has been unreachable past a bound;
 * it also tells each worker its engine's KV-cache capacity, which inferred evictions need. Driven
 * by one scheduled thread ({@link #tick()}); {@link #reachable} may be called from any thread.
 *
 * <p>A condition asks for one purge per episode (asleep, unreachable) and per worker; the worker
 * keeps the purge pending until it succeeds, so a temporary Redis error never latches it as done.
 * When the condition clears, the next episode purges again.
 */
public final class Reconciler {
  private static final Logger log = LoggerFactory.getLogger(Reconciler.class);

  private static final java.time.Duration INCARNATION_TTL = java.time.Duration.ofDays(1);

  private final Shared shared;
  private final Coordinator coordinator;
  private final HttpClient http;
  private final Map<String, Long> unreachableSince = new ConcurrentHashMap<>();
  private final Map<StreamWorker, String> purgedFor = new ConcurrentHashMap<>();
  private final Map<String, String> startTimes = new HashMap<>();
  private final Map<StreamWorker, Integer> restartsSeen = new HashMap<>();
  private final Map<io.kvindex.index.StreamId, Boolean> asleep = new ConcurrentHashMap<>();

  public Reconciler(Shared shared, Coordinator coordinator) {
    this.shared = shared;
    this.coordinator = coordinator;
    this.http = HttpClient.newBuilder().connectTimeout(shared.config().scrapeTimeout()).build();
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
  }

  /** Whether a stream's engine said it sleeps at the last scrape of its pod. */
  public boolean asleep(io.kvindex.index.StreamId stream) {
    return asleep.getOrDefault(stream, false);
  }

  /** One reconcile round; never throws. */
  public void tick() {
    try {
      shared.gate().pass();
      Map<String, List<StreamWorker>> byPod =
          coordinator.workers().values().stream().collect(Collectors.groupingBy(w -> w.id().pod()));
      Set<StreamWorker> live = Set.copyOf(coordinator.workers().values());
      purgedFor.keySet().retainAll(live);
      restartsSeen.keySet().retainAll(live);
      byPod.forEach(this::reconcile);
      unreachableSince.keySet().retainAll(byPod.keySet());
      asleep.keySet().removeIf(s -> !byPod.containsKey(s.pod()));
      startTimes.keySet().retainAll(byPod.keySet());
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

  private void reconcile(String pod, List<StreamWorker> workers) {
    String url = workers.get(0).pod().metricsUrl();
    if (url == null) {
      return;
    }
    String page = scrape(url);
    if (page == null) {
      unreachableSince.putIfAbsent(pod, shared.nanos());
      if (!reachable(pod)) {
        workers.forEach(w -> ensurePurged(w, "unreachable"));
      }
      return;
    }
    unreachableSince.remove(pod);
    String start = EngineMetrics.processStart(page);
    if (start != null) {
      checkIncarnation(pod, workers, start);
    }
    Map<Integer, Boolean> sleeping = EngineMetrics.asleepByEngine(page);
    Map<Integer, Integer> capacity = EngineMetrics.capacityByEngine(page);
    for (StreamWorker w : workers) {
      w.status().capacityBlocks(capacity.getOrDefault(w.id().dpRank(), 0));
      // Level-triggered: the stream holds nothing while its engine says it sleeps.
      boolean now = sleeping.getOrDefault(w.id().dpRank(), false);
      asleep.put(w.id(), now);
      w.status().engineAsleep(now);
      purgedFor.remove(w);
    }
  }

  /**
   * A changed process start time means the engine restarted, even when its sequence numbers have
   * already passed the old watermark. The incarnation is also kept in Redis, so a new owner
   * compares with what the last owner saw.
   */
  private void checkIncarnation(String pod, List<StreamWorker> workers, String start) {
    String seen = startTimes.get(pod);
    if (!start.equals(seen)) {
      String model = workers.get(0).id().model();
      String before;
      try {
        before = shared.index().swapIncarnation(model, pod, start, INCARNATION_TTL).orElse(null);
      } catch (RedisUnavailableException e) {
        shared.metrics().swallowed(Operation.INCARNATION);
        return;
      }
      String reference = seen != null ? seen : before;
      if (reference != null && !reference.equals(start)) {
        for (StreamWorker w : workers) {
          if (w.status().restarts() == restartsSeen.getOrDefault(w, 0)) {
            w.status().requestRestart(); // not already seen through its sequence numbers
          }
        }
      }
      startTimes.put(pod, start);
    }
    workers.forEach(w -> restartsSeen.put(w, w.status().restarts()));
  }

  private void ensurePurged(StreamWorker w, String reason) {
    if (!reason.equals(purgedFor.get(w))) {
      purgedFor.put(w, reason);
      log.info("pod={} stream={}: {}; purging", w.id().pod(), w.id(), reason);
      w.status().requestPurge(reason);
    }
  }

  private String scrape(String url) {
    try {
      HttpRequest req =
          HttpRequest.newBuilder(URI.create(url)).timeout(shared.config().scrapeTimeout()).build();
      HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
      return resp.statusCode() == 200 ? resp.body() : null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (Exception e) {
      return null;
    }
  }
}
