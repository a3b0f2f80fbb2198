package io.kvindex.ingester.lease;

import io.kvindex.common.Threads;
import io.kvindex.index.Lease;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamStatus;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides which streams this replica owns, by lease, and runs a worker for each. Driven by one
 * scheduled thread ({@link #tick()}); the read methods may be called from any thread.
 *
 * <p>Implementation notes. Each tick registers the replica (a heartbeat that also counts the live
 * replicas), renews every held lease, then levels the load: with S streams and N live replicas the
 * fair share is ceil(S / N); a replica below it acquires free streams, a replica above it releases
 * its least preferred ones. Preference is rendezvous hashing on (replica, stream), so replicas
 * mostly reach for different streams and a returning replica gets much the same set back. A lease
 * lost on renewal, or a write refused with a fencing error, stops that stream's worker at once.
 * Streams of pods gone from discovery are purged by their owner before their lease is released; the
 * purge is retried until it succeeds. A pod back as a new incarnation of its engine (restarted, or
 * a new pod behind the old name) has its streams restarted as the sequence numbers would show. A
 * drift resync a router asked for a pod (PrefixIndex#requestResyncAsync) is taken each tick by the
 * owner of each of its streams and handed to that stream's worker.
 */
public final class Coordinator implements StreamWorker.Listener {
  private static final Logger log = LoggerFactory.getLogger(Coordinator.class);

  private static final int LEASE_THREADS = 4;

  private final Shared shared;
  private final ThreadPoolExecutor leaseCalls;
  private final PodDiscovery discovery;
  private final String replica;
  private final Map<StreamId, StreamWorker> workers = new ConcurrentHashMap<>();
  private final Set<StreamId> retiring = ConcurrentHashMap.newKeySet();
  private final Map<StreamWorker, Integer> replacing = new ConcurrentHashMap<>();
  private final Map<StreamId, Thread> threads = new ConcurrentHashMap<>();
  private final Set<StreamWorker> keepLease = ConcurrentHashMap.newKeySet();
  private final Map<StreamWorker, Long> renewedAt = new HashMap<>();
  private volatile Predicate<String> podReachable = pod -> true;
  private volatile Predicate<StreamId> engineAsleep = stream -> false;
  private volatile boolean releaseOnExit = true;
  private volatile int liveReplicas = 1;
  private volatile long lastRedisOkNanos;
  private volatile boolean registered;
  private volatile boolean conflict;

  /** Held by a round, and by {@link #takeReleased} between rounds. */
  private final ReentrantLock round = new ReentrantLock();

  private volatile Map<StreamId, PodSpec> lastDesired = Map.of();
  private int lastLiveReplicas;
  private int lastDesiredSize = -1;
  private int heldAfterLastRound;
  private long releasesSeen;

  /** Until when {@link #takeReleased} watches for given-up leases (nanos). */
  private volatile long watchUntilNanos;

  public Coordinator(Shared shared, PodDiscovery discovery) {
    this.shared = shared;
    this.discovery = discovery;
    this.replica = shared.config().replicaId();
    this.lastRedisOkNanos = shared.nanos();
    this.watchUntilNanos = shared.nanos();
    // Renewals of many leases run in parallel; past the queue the coordinator renews them itself.
    this.leaseCalls =
        Threads.bounded(
            "kvindex-ingester-lease",
            LEASE_THREADS,
            4096,
            new ThreadPoolExecutor.CallerRunsPolicy());
  }

  /**
   * Whether a stream's engine said it sleeps at the last scrape (the reconciler knows): a worker
   * started for it knows from its first step, before the next scrape, and applies nothing from
   * before the sleep.
   */
  public void engineSleepState(Predicate<StreamId> asleep) {
    this.engineAsleep = asleep;
  }

  /** Whether a pod's /metrics answers (the reconciler knows); idle pods are kept live while so. */
  public void podReachability(Predicate<String> reachable) {
    this.podReachable = reachable;
  }

  /** Held streams and their workers (a live view). */
  public Map<StreamId, StreamWorker> workers() {
    return workers;
  }

  /** Live replicas as the registry last said (this one included). */
  public int liveReplicas() {
    return liveReplicas;
  }

  /** True when the last registry call reached Redis within two coordination intervals. */
  public boolean redisOk() {
    return registered
        && shared.nanos() - lastRedisOkNanos
            < shared.config().coordinationInterval().multipliedBy(2).toNanos();
  }

  /**
   * Registers the replica before any lease is taken. A name another live process holds is refused
   * once 1.5 lease TTLs have passed: a crashed predecessor's entry expires within one, a live
   * duplicate's never does. A Redis that does not answer leaves it to the ticks.
   *
   * @throws ReplicaConflictException if another live ingester holds this replica id
   */
  public void registerAtStart() {
    Duration ttl = shared.config().leaseTtl();
    long end = shared.nanos() + ttl.toNanos() * 3 / 2;
    while (true) {
      try {
        liveReplicas = Math.max(1, shared.index().registerReplica(replica, ttl));
        registered = true;
        lastRedisOkNanos = shared.nanos();
        return;
      } catch (ReplicaConflictException e) {
        if (shared.nanos() - end > 0) {
          throw e;
        }
        LockSupport.parkNanos(Duration.ofMillis(100).toNanos());
      } catch (RedisUnavailableException e) {
        shared.metrics().swallowed(Operation.COORDINATION);
        return;
      }
    }
  }

  /** True while another live process holds this replica's id: it owns and writes nothing then. */
  public boolean replicaConflict() {
    return conflict;
  }

  /**
   * How often a replica short of its fair share looks, between rounds, for a stream another replica
   * gave up ({@link #takeReleased}).
   */
  public static final Duration RELEASE_WATCH = Duration.ofMillis(50);

  /**
   * One coordination round; never throws. Registration comes first: when Redis does not answer it,
   * the round is skipped (counted and logged). After it, each step (renewals, retiring, levelling,
   * liveness, resyncs, the index identity check) runs whatever the others met: a step that meets a
   * temporary Redis error is counted and logged, and the next one still runs, so one slow call on a
   * loaded host never holds back a takeover.
   */
  public void tick() {
    round.lock();
    try {
      Map<StreamId, PodSpec> desired;
      Duration ttl = shared.config().leaseTtl();
      try {
        shared.faults().beforeWrite();
        desired = desired();
        shared.metrics().streamsDiscovered(desired.size());
        liveReplicas = Math.max(1, shared.index().registerReplica(replica, ttl));
        registered = true;
        lastRedisOkNanos = shared.nanos();
        if (conflict) {
          conflict = false;
          log.warn("replica={}: the id is this replica's again; taking leases again", replica);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RedisUnavailableException e) {
        shared.metrics().swallowed(Operation.COORDINATION);
        log.warn(
            "replica={}: coordination skipped, Redis unavailable: {}", replica, e.getMessage());
        return;
      } catch (ReplicaConflictException e) {
        conflicted(e);
        return;
      } catch (RuntimeException e) {
        failed("registration", e);
        return;
      }
      lastDesired = desired;
      boolean going =
          step("lease renewal", () -> renew(ttl))
              && step("retiring", () -> retire(desired))
              && step("levelling", () -> level(desired, ttl))
              && step("pod liveness", this::heartbeat)
              && step("resync requests", this::takeResyncs)
              // an idle stream would otherwise never see a lost index
              && step("index identity", () -> shared.index().checkIdentity());
      if (going) {
        shared.metrics().leasesHeld(workers.size());
        shared.metrics().coordinationRound();
      }
    } finally {
      round.unlock();
    }
  }

  /** A step of a round. */
  private interface Step {
    void run() throws InterruptedException;
  }

  /**
   * Runs one step of a round; a failure is counted and logged, and the round goes on.
   *
   * @return false when the round must stop: the thread was interrupted (the ingester is stopping)
   */
  private boolean step(String what, Step step) {
    try {
      step.run();
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (RedisUnavailableException e) {
      shared.metrics().swallowed(Operation.COORDINATION);
      log.warn(
          "replica={}: coordination step '{}' skipped, Redis unavailable (the round goes on): {}",
          replica,
          what,
          e.getMessage());
      return true;
    } catch (RuntimeException e) {
      if (Thread.currentThread().isInterrupted()) {
        return false; // stopping: the wait for Redis was cut short, nothing failed
      }
      failed(what, e);
      return true;
    }
  }

  private void failed(String what, RuntimeException e) {
    if (Thread.currentThread().isInterrupted()) {
      return; // stopping: the wait for Redis was cut short, nothing failed
    }
    shared.metrics().realError(Operation.COORDINATION);
    log.error("replica={}: coordination step '{}' failed", replica, what, e);
  }

  /**
   * Between rounds, every {@link #RELEASE_WATCH}: a replica the last round left short of its fair
   * share after the replicas or the streams changed (one that just joined, say, while the others
   * still hold every stream), or after it lost leases (fenced, or paused past its TTL), reads how
   * many leases the replicas have given up, and when another gave one up takes it at once, instead
   * of at its next round (a third of the lease TTL later, or two thirds when one round met a slow
   * call). It watches for one lease TTL, long enough for every other replica's next round to shed;
   * it costs one read per watch. Never throws.
   */
  public void takeReleased() {
    if (conflict || shared.nanos() - watchUntilNanos >= 0 || !round.tryLock()) {
      return;
    }
    try {
      shared.faults().beforeWrite();
      long releases = shared.index().leaseReleases();
      if (releases == releasesSeen) {
        return;
      }
      Map<StreamId, PodSpec> desired = lastDesired;
      int before = workers.size();
      if (acquire(desired, shared.config().leaseTtl(), fairShare(desired))) {
        watchUntilNanos = shared.nanos();
      }
      boolean ownStopping =
          desired.keySet().stream()
              .anyMatch(s -> threads.containsKey(s) && !workers.containsKey(s));
      if (!ownStopping) {
        releasesSeen = releases; // else look again: a worker of this replica's is still stopping
      }
      if (workers.size() > before) {
        log.info(
            "replica={}: took {} stream(s) another replica gave up, between rounds",
            replica,
            workers.size() - before);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RedisUnavailableException e) {
      shared.metrics().swallowed(Operation.COORDINATION);
    } catch (RuntimeException e) {
      failed("taking given-up leases", e);
    } finally {
      round.unlock();
    }
  }

  /**
   * Another live process registered this replica's id (this one was paused past its registration,
   * say): its leases carry the same owner name, so this replica's workers stop at once, releasing
   * nothing (a release would free the other's), and it takes no lease until the id is its own.
   */
  private void conflicted(ReplicaConflictException e) {
    shared.metrics().realError(Operation.COORDINATION);
    if (!conflict) {
      log.error("replica={}: {}; stopping every stream of this replica", replica, e.getMessage());
    }
    conflict = true;
    for (StreamWorker w : List.copyOf(workers.values())) {
      keepLease.add(w);
      workers.remove(w.id(), w);
      w.halt();
    }
  }

  private Map<StreamId, PodSpec> desired() {
    Map<StreamId, PodSpec> out = new HashMap<>();
    for (PodSpec p : discovery.pods()) {
      for (StreamId s : p.streams()) {
        out.put(s, p);
      }
    }
    return out;
  }

  /**
   * Renews every lease. A failed renewal may be a Redis blip rather than a loss, and writes are
   * fenced anyway, so a worker is only stopped once its lease has surely expired.
   */
  private void renew(Duration ttl) throws InterruptedException {
    long now = shared.nanos();
    List<StreamWorker> held = List.copyOf(workers.values());
    List<Future<Boolean>> results = new ArrayList<>(held.size());
    for (StreamWorker w : held) {
      results.add(leaseCalls.submit(() -> shared.index().renewLease(w.id(), w.lease(), ttl)));
    }
    for (int i = 0; i < held.size(); i++) {
      StreamWorker w = held.get(i);
      if (renewed(w, results.get(i))) {
        renewedAt.put(w, now);
      } else if (now - renewedAt.getOrDefault(w, now) >= ttl.toNanos()) {
        log.warn("pod={} stream={}: lease lost; stopping its worker", w.id().pod(), w.id());
        shared.metrics().leaseMoved("lost");
        drop(w, false);
      }
    }
    renewedAt.keySet().retainAll(Set.copyOf(workers.values()));
  }

  private boolean renewed(StreamWorker w, Future<Boolean> result) throws InterruptedException {
    try {
      return result.get();
    } catch (ExecutionException e) {
      shared.metrics().realError(Operation.LEASE);
      log.error("pod={} stream={}: lease renewal failed", w.id().pod(), w.id(), e.getCause());
      return false;
    }
  }

  /**
   * Purges, then drops, the workers of pods gone from discovery (a retiring worker is dropped once
   * its purge is done, even if its pod came back meanwhile); restarts the streams of pods whose
   * engine is a new incarnation, then gives them a fresh worker; restarts the worker on any other
   * spec change.
   */
  private void retire(Map<StreamId, PodSpec> desired) {
    for (StreamWorker w : List.copyOf(workers.values())) {
      PodSpec now = desired.get(w.id());
      if (retiring.contains(w.id())) {
        if (!w.status().purgePending()) {
          drop(w, true);
        }
      } else if (now == null) {
        log.info("pod={} stream={}: pod left discovery; purging", w.id().pod(), w.id());
        retiring.add(w.id());
        w.status().requestPurge("pod_removed");
      } else if (!now.incarnation().equals(w.pod().incarnation())) {
        replaced(w, now);
      } else if (!now.equals(w.pod())) {
        log.info("pod={} stream={}: spec changed; restarting its worker", w.id().pod(), w.id());
        drop(w, true);
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
    Integer restartsBefore = replacing.get(w);
    if (restartsBefore == null) {
      log.info(
          "pod={} stream={}: new incarnation {} (was {}): its engine restarted; purging and"
              + " replaying from 0",
          w.id().pod(),
          w.id(),
          now.incarnation(),
          w.pod().incarnation());
      replacing.put(w, w.status().restarts());
      shared.metrics().podReplaced();
      w.status().requestRestart();
    } else if (w.status().restarts() > restartsBefore && !w.status().purgePending()) {
      drop(w, true);
    }
  }

  private int fairShare(Map<StreamId, PodSpec> desired) {
    return (desired.size() + liveReplicas - 1) / liveReplicas;
  }

  private void level(Map<StreamId, PodSpec> desired, Duration ttl) {
    int fair = fairShare(desired);
    List<StreamId> ranked = ranked(desired);
    int held = workers.size() - retiring.size();
    if (held > fair) {
      for (int i = ranked.size() - 1; i >= 0 && held > fair; i--) {
        StreamWorker w = workers.get(ranked.get(i));
        if (w != null && !retiring.contains(w.id())) {
          log.info("pod={} stream={}: over fair share {}; releasing", w.id().pod(), w.id(), fair);
          shared.metrics().leaseMoved("shed");
          drop(w, true);
          held--;
        }
      }
    }
    // the replicas or the streams changed, or this replica lost leases (fenced after an index
    // loss, or paused past its TTL): another replica may shed what this one is short of
    boolean changed =
        liveReplicas != lastLiveReplicas
            || desired.size() != lastDesiredSize
            || held < heldAfterLastRound;
    lastLiveReplicas = liveReplicas;
    lastDesiredSize = desired.size();
    if (held < fair && changed) {
      try {
        // read before trying: a lease given up after this read is seen by the watch
        releasesSeen = shared.index().leaseReleases();
        watchUntilNanos = shared.nanos() + ttl.toNanos();
      } catch (RedisUnavailableException e) {
        shared.metrics().swallowed(Operation.COORDINATION); // no watch: the next round takes them
      }
    }
    if (acquire(desired, ttl, fair)) {
      watchUntilNanos = shared.nanos();
    }
    heldAfterLastRound = workers.size() - retiring.size();
  }

  /**
   * Takes free streams, most preferred first, until this replica holds its fair share.
   *
   * @return whether it holds it
   */
  private boolean acquire(Map<StreamId, PodSpec> desired, Duration ttl, int fair) {
    int held = workers.size() - retiring.size();
    for (StreamId s : ranked(desired)) {
      if (held >= fair) {
        break;
      }
      if (!workers.containsKey(s) && !threads.containsKey(s)) {
        Optional<Lease> lease = shared.index().acquireLease(s, replica, ttl);
        if (lease.isPresent()) {
          start(s, desired.get(s), lease.get());
          held++;
        }
      }
    }
    return held >= fair;
  }

  private List<StreamId> ranked(Map<StreamId, PodSpec> desired) {
    List<StreamId> ranked = new ArrayList<>(desired.keySet());
    ranked.sort(Comparator.comparingLong(this::preference).reversed());
    return ranked;
  }

  private long preference(StreamId s) {
    long h = 1125899906842597L;
    for (char c : (replica + "|" + s.model() + "|" + s.pod() + "|" + s.dpRank()).toCharArray()) {
      h = 31 * h + c;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return h;
  }

  private void start(StreamId s, PodSpec pod, Lease lease) {
    shared.metrics().leaseMoved("acquired");
    StreamWorker w = new StreamWorker(s, pod.keyMode(), pod, lease, shared, this);
    w.status().engineAsleep(engineAsleep.test(s));
    Thread t = Threads.daemon("kvindex-stream-" + s.pod() + "-dp" + s.dpRank(), w);
    workers.put(s, w);
    threads.put(s, t);
    t.start();
  }

  /**
   * The least time between two resyncs of one stream, whatever routers ask: a resync that cannot
   * infer purges and replays the stream, which no router may repeat at will.
   */
  static final Duration RESYNC_SPACING = Duration.ofSeconds(30);

  /**
   * Hands each held stream the drift resync a router asked for its pod, if one stands that this
   * stream has not taken yet (one read per stream, in parallel like the renewals).
   */
  private void takeResyncs() throws InterruptedException {
    List<StreamWorker> held = List.copyOf(workers.values());
    List<Future<Optional<String>>> asked = new ArrayList<>(held.size());
    for (StreamWorker w : held) {
      asked.add(leaseCalls.submit(() -> shared.index().takeResync(w.id(), RESYNC_SPACING)));
    }
    for (int i = 0; i < held.size(); i++) {
      StreamWorker w = held.get(i);
      try {
        asked.get(i).get().ifPresent(note -> w.status().requestResync(note));
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RedisUnavailableException) {
          shared.metrics().swallowed(Operation.RESYNC);
        } else {
          shared.metrics().realError(Operation.RESYNC);
          log.error(
              "pod={} stream={}: reading its resync request failed",
              w.id().pod(),
              w.id(),
              e.getCause());
        }
      }
    }
  }

  /**
   * Keeps idle owned pods live while their event channels show that their engines are (a batch, a
   * connected SUB socket answering heartbeats, a replay answer within a third of the liveness TTL),
   * and their {@code /metrics}, if any, answers; a pod whose batches are being applied is refreshed
   * by them. A pod whose channels all went silent is left to expire: lookups stop crediting it one
   * liveness TTL later.
   */
  private void heartbeat() {
    Set<List<String>> pods = new java.util.HashSet<>();
    long idle = shared.config().podLivenessTtl().toNanos() / 3;
    for (StreamWorker w : workers.values()) {
      if (w.status().state() == StreamStatus.State.RUNNING
          && shared.nanos() - w.status().lastAppliedNanos() > idle
          && w.status().silentNanos() < idle
          && podReachable.test(w.id().pod())) {
        pods.add(List.of(w.id().model(), w.id().pod()));
      }
    }
    for (List<String> p : pods) {
      if (!shared.index().heartbeat(p.get(0), p.get(1), shared.config().podLivenessTtl())) {
        shared.metrics().swallowed(Operation.HEARTBEAT);
      }
    }
  }

  /** Stops a worker; its lease is released when it has exited if {@code release}. */
  private void drop(StreamWorker w, boolean release) {
    workers.remove(w.id(), w);
    retiring.remove(w.id());
    if (!release) {
      keepLease.add(w);
    }
    w.stop();
  }

  @Override
  public void exited(StreamWorker w, StreamStatus.State finalState) {
    threads.remove(w.id(), Thread.currentThread());
    workers.remove(w.id(), w);
    retiring.remove(w.id());
    replacing.remove(w);
    boolean keep = keepLease.remove(w);
    if (!workers.containsKey(w.id())) {
      shared.metrics().forget(w.id());
    }
    if (finalState == StreamStatus.State.FENCED) {
      shared.metrics().leaseMoved("fenced");
    } else if (!keep && releaseOnExit) {
      try {
        shared.index().releaseLease(w.id(), w.lease());
        shared.metrics().leaseMoved("released");
      } catch (RuntimeException e) {
        log.warn("pod={} stream={}: lease not released ({}); it expires", w.id().pod(), w.id(), e);
      }
    }
  }

  /**
   * The index lost a group, or may have (its epoch or node history changed): every stream held in
   * it starts again from what its engine can replay.
   */
  public void indexReset(int group) {
    for (StreamWorker w : workers.values()) {
      if (shared.index().groupOf(w.id().model(), w.id().pod()) == group) {
        w.status().requestIndexReset();
      }
    }
  }

  /** Halts every worker (none writes again); leases are released unless {@code crash}. */
  public void stopWorkers(boolean crash) {
    releaseOnExit = !crash;
    for (StreamWorker w : workers.values()) {
      w.halt();
    }
  }

  /** Stops every worker and waits for them; releases leases unless {@code crash}. */
  public void stopAll(boolean crash, Duration wait) {
    stopWorkers(crash);
    long end = System.nanoTime() + wait.toNanos();
    for (Thread t : List.copyOf(threads.values())) {
      long left = Math.max(1, (end - System.nanoTime()) / 1_000_000);
      try {
        t.join(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    leaseCalls.shutdownNow();
    if (!crash) {
      try {
        shared.index().deregisterReplica(replica);
      } catch (RuntimeException e) {
        log.warn("replica={}: not deregistered ({}); its entry expires", replica, e.toString());
      }
    }
  }
}
