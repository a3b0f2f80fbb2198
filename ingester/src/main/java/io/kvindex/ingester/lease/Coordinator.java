package io.kvindex.ingester.lease;

import io.kvindex.index.Lease;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.ingester.discovery.PodDiscovery;
import io.kvindex.ingester.discovery.PodSpec;
import io.kvindex.ingester.stream.StreamWorker;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides which streams this replica owns, by lease, and runs a worker for each. Driven by one
 * scheduled thread ({@link #tick()}); the read methods may be called from any thread.
 *
 * <p>Implementation notes. Each tick registers the replica ({@link Registration}), renews every
 * held lease, then levels the load: a replica below its fair share acquires free streams, a replica
 * above it releases its least preferred ones ({@link Shares}). Each held stream's worker goes
 * through {@link Holding}; the per-stream Redis calls run in parallel ({@link StreamCalls}). A
 * lease lost on renewal, or a write refused with a fencing error, stops that stream's worker at
 * once. Streams of pods gone from discovery are purged by their owner before their lease is
 * released; the purge is retried until it succeeds. A pod back as a new incarnation of its engine
 * (restarted, or a new pod behind the old name) has its streams restarted as the sequence numbers
 * would show ({@link PodChanges}). A drift resync a router asked for a pod
 * (PrefixIndex#requestResyncAsync) is taken each tick by the owner of each of its streams and
 * handed to that stream's worker.
 */
public final class Coordinator {
  private static final Logger log = LoggerFactory.getLogger(Coordinator.class);

  private final Shared shared;
  private final StreamCalls calls;
  private final PodDiscovery discovery;
  private final String replica;
  private final HeldStreams held;

  /** The workers held, by stream: a live view of {@link #held}'s. */
  private final Map<StreamId, StreamWorker> workers;

  private final Map<StreamWorker, Long> renewedAt = new HashMap<>();
  private volatile Predicate<String> podReachable = pod -> true;
  private volatile Predicate<StreamId> engineAsleep = stream -> false;
  private final Registration registration;
  private final Shares shares;
  private final PodChanges podChanges;

  /** Held by a round, and by {@link #takeReleased} between rounds. */
  private final ReentrantLock round = new ReentrantLock();

  private volatile Map<StreamId, PodSpec> lastDesired = Map.of();

  /** When {@link #takeReleased} watches for given-up leases; guarded by {@link #round}. */
  private final ReleaseWatch watch;

  public Coordinator(Shared shared, PodDiscovery discovery) {
    this.shared = shared;
    this.discovery = discovery;
    this.replica = shared.config().replicaId();
    this.registration = new Registration(shared);
    this.shares = new Shares(replica);
    this.watch = new ReleaseWatch(shared.nanos());
    this.calls = new StreamCalls(shared);
    this.held = new HeldStreams(shared);
    this.workers = held.workers();
    this.podChanges = new PodChanges(shared, held);
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
    return registration.liveReplicas();
  }

  /** True when the last registry call reached Redis within two coordination intervals. */
  public boolean redisOk() {
    return registration.redisOk();
  }

  /**
   * Registers the replica before any lease is taken. A name another live process holds is refused
   * once 1.5 lease TTLs have passed: a crashed predecessor's entry expires within one, a live
   * duplicate's never does. A Redis that does not answer leaves it to the ticks.
   *
   * @throws ReplicaConflictException if another live ingester holds this replica id
   */
  public void registerAtStart() {
    registration.atStart();
  }

  /** True while another live process holds this replica's id: it owns and writes nothing then. */
  public boolean replicaConflict() {
    return registration.conflict();
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
        registration.register(ttl);
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
              && step("retiring", () -> podChanges.follow(desired))
              && step("levelling", () -> level(desired, ttl))
              && step("pod liveness", () -> calls.keepLive(workers.values(), podReachable))
              && step("resync requests", () -> calls.takeResyncs(List.copyOf(workers.values())))
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
    if (registration.conflict() || !round.tryLock()) {
      return;
    }
    try {
      if (!watch.watching(shared.nanos())) {
        return;
      }
      shared.faults().beforeWrite();
      long releases = shared.index().leaseReleases();
      if (!watch.released(releases)) {
        return;
      }
      Map<StreamId, PodSpec> desired = lastDesired;
      int before = workers.size();
      if (acquire(desired, shared.config().leaseTtl(), fairShare(desired))) {
        watch.stop(shared.nanos());
      }
      boolean ownStopping = desired.keySet().stream().anyMatch(held::stopping);
      if (!ownStopping) {
        watch.seen(releases); // else look again: a worker of this replica's is still stopping
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
    if (registration.conflicted()) {
      log.error("replica={}: {}; stopping every stream of this replica", replica, e.getMessage());
    }
    held.haltKeepingLeases();
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
    List<StreamWorker> owned = List.copyOf(workers.values());
    List<Boolean> renewed = calls.renew(owned, ttl);
    for (int i = 0; i < owned.size(); i++) {
      StreamWorker w = owned.get(i);
      if (renewed.get(i)) {
        renewedAt.put(w, now);
      } else if (now - renewedAt.getOrDefault(w, now) >= ttl.toNanos()) {
        log.warn("pod={} stream={}: lease lost; stopping its worker", w.id().pod(), w.id());
        shared.metrics().leaseMoved("lost");
        held.stop(w, Holding.Event.STOP_KEEPING_LEASE);
      }
    }
    renewedAt.keySet().retainAll(Set.copyOf(workers.values()));
  }

  private int fairShare(Map<StreamId, PodSpec> desired) {
    return Shares.fair(desired.size(), registration.liveReplicas());
  }

  private void level(Map<StreamId, PodSpec> desired, Duration ttl) {
    int fair = fairShare(desired);
    List<StreamId> ranked = shares.ranked(desired.keySet());
    int count = held.counted();
    if (count > fair) {
      for (int i = ranked.size() - 1; i >= 0 && count > fair; i--) {
        StreamWorker w = workers.get(ranked.get(i));
        if (w != null && held.holding(w) != Holding.RETIRING) {
          log.info("pod={} stream={}: over fair share {}; releasing", w.id().pod(), w.id(), fair);
          shared.metrics().leaseMoved("shed");
          held.stop(w, Holding.Event.STOP);
          count--;
        }
      }
    }
    if (watch.shortAfterChange(registration.liveReplicas(), desired.size(), count, fair)) {
      try {
        // read before trying: a lease given up after this read is seen by the watch
        long releases = shared.index().leaseReleases();
        watch.start(releases, shared.nanos() + ttl.toNanos());
      } catch (RedisUnavailableException e) {
        shared.metrics().swallowed(Operation.COORDINATION); // no watch: the next round takes them
      }
    }
    if (acquire(desired, ttl, fair)) {
      watch.stop(shared.nanos());
    }
    watch.roundEnded(held.counted());
  }

  /**
   * Takes free streams, most preferred first, until this replica holds its fair share.
   *
   * @return whether it holds it
   */
  private boolean acquire(Map<StreamId, PodSpec> desired, Duration ttl, int fair) {
    int count = held.counted();
    for (StreamId s : shares.ranked(desired.keySet())) {
      if (count >= fair) {
        break;
      }
      if (!held.present(s)) {
        Optional<Lease> lease = shared.index().acquireLease(s, replica, ttl);
        if (lease.isPresent()) {
          held.start(s, desired.get(s), lease.get(), engineAsleep.test(s));
          count++;
        }
      }
    }
    return count >= fair;
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
    held.haltAll(crash);
  }

  /** Stops every worker and waits for them; releases leases unless {@code crash}. */
  public void stopAll(boolean crash, Duration wait) {
    stopWorkers(crash);
    if (!held.join(wait)) {
      return;
    }
    calls.shutdownNow();
    if (!crash) {
      try {
        shared.index().deregisterReplica(replica);
      } catch (RuntimeException e) {
        log.warn("replica={}: not deregistered ({}); its entry expires", replica, e.toString());
      }
    }
  }
}
