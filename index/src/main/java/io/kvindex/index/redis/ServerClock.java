package io.kvindex.index.redis;

import io.kvindex.redis.RedisOutcome;
import io.kvindex.redis.ScriptRunner;
import io.lettuce.core.ScriptOutputType;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.LongSupplier;

/**
 * The clock of the Redis node serving each group, estimated from TIME so that lookups judge
 * liveness and speculation deadlines (written with Redis's TIME by the scripts) by Redis's clock
 * without asking it on every lookup. Redis's time is measured on first use and again at most once a
 * second, in the background, and carried forward between measurements on this host's monotonic
 * clock ({@link System#nanoTime}), never on its wall clock, which a time step (NTP, an operator)
 * can move by any amount at any moment. The estimate is off by at most half the round trip of the
 * measurement plus the two clocks' drift over a second. Thread-safe.
 */
final class ServerClock {
  private static final long REFRESH_NANOS = 1_000_000_000L;

  private final ScriptRunner reads;
  private final KeySchema keys;

  /** Per group: the last estimate, null before the first. */
  private final AtomicReferenceArray<Estimate> estimates;

  private final AtomicIntegerArray refreshing;
  private final LongSupplier nanos;
  private final LongSupplier wallMillis;

  /** Redis's time in ms at {@code at}, this host's monotonic clock in ns. */
  private record Estimate(long redisMillis, long at) {}

  ServerClock(ScriptRunner reads, KeySchema keys) {
    this(reads, keys, System::nanoTime, System::currentTimeMillis);
  }

  /**
   * @param nanos this host's monotonic clock, ns
   * @param wallMillis this host's wall clock, ms: stands in only until Redis first answers
   */
  ServerClock(ScriptRunner reads, KeySchema keys, LongSupplier nanos, LongSupplier wallMillis) {
    this.reads = reads;
    this.keys = keys;
    this.estimates = new AtomicReferenceArray<>(keys.groups());
    this.refreshing = new AtomicIntegerArray(keys.groups());
    this.nanos = nanos;
    this.wallMillis = wallMillis;
  }

  /**
   * The group's Redis time in ms: at once from the last estimate (refreshing it in the background
   * when older than a second), or after a first measurement. If the first measurement is swallowed
   * (Redis unreachable within the lookup budget) this host's clock stands in.
   */
  CompletableFuture<Long> nowMillis(int group) {
    Estimate estimate = estimates.get(group);
    if (estimate == null) {
      return measure(group).thenApply(x -> now(estimates.get(group)));
    }
    if (nanos.getAsLong() - estimate.at() > REFRESH_NANOS
        && refreshing.compareAndSet(group, 0, 1)) {
      measure(group).whenComplete((x, e) -> refreshing.set(group, 0));
    }
    return CompletableFuture.completedFuture(now(estimate));
  }

  private long now(Estimate estimate) {
    if (estimate == null) {
      return wallMillis.getAsLong();
    }
    return estimate.redisMillis() + (nanos.getAsLong() - estimate.at()) / 1_000_000;
  }

  private CompletableFuture<Void> measure(int group) {
    long sent = nanos.getAsLong();
    return new TimeCall(group)
        .on(keys)
        .<List<Object>>run(reads, ScriptOutputType.MULTI)
        .handle(
            (outcome, error) -> {
              if (error == null && outcome.isDone()) {
                record(group, outcome, sent, nanos.getAsLong());
              }
              return null;
            });
  }

  /** Redis answered TIME between {@code sent} and {@code received} (ns): taken as half-way. */
  private void record(int group, RedisOutcome<List<Object>> outcome, long sent, long received) {
    List<Object> time = outcome.orElseThrow();
    long redisMillis = Bytes.number(time.get(0)) * 1000 + Bytes.number(time.get(1)) / 1000;
    estimates.set(group, new Estimate(redisMillis, sent + (received - sent) / 2));
  }
}
