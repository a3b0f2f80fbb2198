package io.kvindex.index.redis;

import static io.kvindex.index.redis.Bytes.ascii;
import static io.kvindex.index.redis.Bytes.text;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.Lease;
import io.kvindex.index.ReplicaConflictException;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.Optional;

/**
 * Who writes what: stream leases with fencing tokens (lease.lua), the ingester replica registry
 * (registry.lua) and streams' engine incarnations (incarnation.lua). Thread-safe.
 */
final class RedisLeases {
  private final KeySchema keys;
  private final ScriptRunner writes;
  private final RedisClusterAsyncCommands<byte[], byte[]> commands;
  private static final byte[] RELEASES_FIELD = ascii("count");

  /** This index instance's run id in the replica registry: a replica name is held by one. */
  private final String process = java.util.UUID.randomUUID().toString();

  RedisLeases(
      KeySchema keys, ScriptRunner writes, RedisClusterAsyncCommands<byte[], byte[]> commands) {
    this.keys = keys;
    this.writes = writes;
    this.commands = commands;
  }

  Optional<Lease> acquire(StreamId stream, String owner, Duration ttl) {
    byte[] token = this.<byte[]>lease(stream, "acquire", owner, ttl, 0).orElse(null);
    return token == null
        ? Optional.empty()
        : Optional.of(new Lease(Long.parseLong(text(token)), owner));
  }

  boolean renew(StreamId stream, Lease lease, Duration ttl) {
    Check.notNull(lease, "lease");
    return Long.valueOf(1)
        .equals(this.<Long>lease(stream, "renew", lease.owner(), ttl, lease.token()).orElse(0L));
  }

  /**
   * Gives the lease up, then counts it in the registry's {@code releases} (another call: the lease
   * is in its group's slot, the count beside the registry). A count that does not reach Redis only
   * leaves a replica short of its share to take the stream at its next round.
   */
  boolean release(StreamId stream, Lease lease) {
    Check.notNull(lease, "lease");
    boolean released =
        Long.valueOf(1)
            .equals(
                this.<Long>lease(
                        stream, "release", lease.owner(), Duration.ofMillis(1), lease.token())
                    .orElse(0L));
    if (released) {
      Await.of(
          writes
              .calls()
              .<Long>call(
                  "lease-releases", () -> commands.hincrby(keys.leaseReleases(), RELEASES_FIELD, 1))
              .toCompletableFuture());
    }
    return released;
  }

  long releases() {
    byte[] count =
        Await.of(
                writes
                    .calls()
                    .<byte[]>call(
                        "lease-releases", () -> commands.hget(keys.leaseReleases(), RELEASES_FIELD))
                    .toCompletableFuture())
            .orElseThrow();
    return count == null ? 0 : Long.parseLong(text(count));
  }

  private <T> RedisOutcome<T> lease(
      StreamId stream, String op, String owner, Duration ttl, long token) {
    Check.notNull(stream, "stream");
    Check.name(owner, "owner");
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    ScriptOutputType type =
        op.equals("acquire") ? ScriptOutputType.VALUE : ScriptOutputType.INTEGER;
    return Await.of(new LeaseCall(op, stream, owner, ttlMs, token).on(keys).<T>run(writes, type));
  }

  int registerReplica(String replica, Duration ttl) {
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    int live = registry(Check.name(replica, "replica"), Math.max(1, ttlMs));
    if (live < 0) {
      throw new ReplicaConflictException(
          "replica id '"
              + replica
              + "' is registered by another live ingester of this index: give each replica"
              + " its own --replica-id (the default, $HOSTNAME-<random>, always is); a replica"
              + " that restarts under its old id waits for the old entry"
              + " to expire (one lease TTL)");
    }
    return live;
  }

  void deregisterReplica(String replica) {
    registry(Check.name(replica, "replica"), -1); // another process's name is left alone
  }

  private int registry(String replica, long ttlMillis) {
    RedisOutcome<Long> out =
        Await.of(
            new RegistryCall(replica, ttlMillis, process)
                .on(keys)
                .<Long>run(writes, ScriptOutputType.INTEGER));
    return out.orElseThrow().intValue();
  }

  Optional<String> incarnation(StreamId stream) {
    Check.notNull(stream, "stream");
    byte[] recorded =
        Await.of(
                new IncarnationCall.Get(stream)
                    .on(keys)
                    .<byte[]>run(writes, ScriptOutputType.VALUE))
            .orElseThrow();
    return recorded == null ? Optional.empty() : Optional.of(text(recorded));
  }

  boolean recordIncarnation(StreamId stream, String expected, String incarnation, Duration ttl) {
    Check.notNull(stream, "stream");
    Check.notBlank(incarnation, "incarnation");
    long ttlMs = Check.atLeastOneMilli(ttl, "ttl").toMillis();
    Long set =
        Await.of(
                new IncarnationCall.Set(
                        stream, expected == null ? "" : expected, incarnation, ttlMs)
                    .on(keys)
                    .<Long>run(writes, ScriptOutputType.INTEGER))
            .orElseThrow();
    return set == 1;
  }
}
