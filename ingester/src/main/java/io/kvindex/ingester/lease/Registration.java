package io.kvindex.ingester.lease;

import io.kvindex.index.ReplicaConflictException;
import io.kvindex.ingester.IngesterMetrics.Operation;
import io.kvindex.ingester.Shared;
import io.kvindex.redis.RedisUnavailableException;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This replica's entry in the index's replica registry, as a state machine ({@link State}): the
 * registry counts the live replicas (each one's fair share of streams), and a replica whose id
 * another live process holds owns and writes nothing until the id is its own again. Registered by
 * the coordinator's thread; the read methods may be called from any thread.
 */
final class Registration {
  private static final Logger log = LoggerFactory.getLogger(Registration.class);

  /** Where the replica's registration stands. */
  enum State {
    /** Not registered yet (Redis has not answered since the start). */
    UNREGISTERED,
    /** The registry holds this replica's entry. */
    REGISTERED,
    /** Another live process holds this replica's id: this one owns and writes nothing. */
    CONFLICTED;

    /**
     * The state after a registry call answered: registered, or refused the id ({@code conflict}).
     */
    State on(boolean conflict) {
      return conflict ? CONFLICTED : REGISTERED;
    }
  }

  private final Shared shared;
  private final String replica;
  private volatile State state = State.UNREGISTERED;
  private volatile int liveReplicas = 1;

  /** When the registry last answered (nanos); meaningful once registered. */
  private volatile long lastOkNanos;

  /** Whether the registry has answered since the start. */
  private volatile boolean everRegistered;

  Registration(Shared shared) {
    this.shared = shared;
    this.replica = shared.config().replicaId();
    this.lastOkNanos = shared.nanos();
  }

  /** Live replicas as the registry last said (this one included). */
  int liveReplicas() {
    return liveReplicas;
  }

  /** True when the last registry call reached Redis within two coordination intervals. */
  boolean redisOk() {
    return everRegistered
        && shared.nanos() - lastOkNanos
            < shared.config().coordinationInterval().multipliedBy(2).toNanos();
  }

  /** True while another live process holds this replica's id. */
  boolean conflict() {
    return state == State.CONFLICTED;
  }

  /**
   * Registers before any lease is taken. A name another live process holds is refused once 1.5
   * lease TTLs have passed: a crashed predecessor's entry expires within one, a live duplicate's
   * never does. A Redis that does not answer leaves it to the rounds.
   *
   * @throws ReplicaConflictException if another live ingester holds this replica id
   */
  void atStart() {
    Duration ttl = shared.config().leaseTtl();
    long end = shared.nanos() + ttl.toNanos() * 3 / 2;
    while (true) {
      try {
        register(ttl);
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

  /**
   * Registers (a heartbeat that also counts the live replicas). A refusal is left to the caller,
   * which calls {@link #conflicted}.
   *
   * @throws ReplicaConflictException if another live process holds this replica's id
   * @throws RedisUnavailableException if Redis does not answer
   */
  void register(Duration ttl) {
    liveReplicas = Math.max(1, shared.index().registerReplica(replica, ttl));
    everRegistered = true;
    lastOkNanos = shared.nanos();
    State before = state;
    state = before.on(false);
    if (before == State.CONFLICTED) {
      log.warn("replica={}: the id is this replica's again; taking leases again", replica);
    }
  }

  /**
   * The registry refused the id; returns whether this is news (the replica was not in conflict).
   */
  boolean conflicted() {
    State before = state;
    state = before.on(true);
    return before != State.CONFLICTED;
  }
}
