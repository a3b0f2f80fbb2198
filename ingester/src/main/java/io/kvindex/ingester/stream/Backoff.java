package io.kvindex.ingester.stream;

import io.kvindex.common.Check;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Capped exponential backoff with full jitter: the n-th delay is uniform in [base, min(cap, base *
 * 2^n)]. Not thread-safe: one per loop.
 */
public final class Backoff {
  private final long baseNanos;
  private final long capNanos;
  private int attempts;

  public Backoff(Duration base, Duration cap) {
    this.baseNanos = Check.positive(base, "base").toNanos();
    this.capNanos = Math.max(baseNanos, Check.positive(cap, "cap").toNanos());
  }

  /** The next delay, growing with each call until {@link #reset()}. */
  public Duration next() {
    int shift = Math.min(attempts++, 30);
    long ceiling = Math.min(capNanos, baseNanos << shift);
    if (ceiling < 0) {
      ceiling = capNanos;
    }
    long nanos = baseNanos + ThreadLocalRandom.current().nextLong(ceiling - baseNanos + 1);
    return Duration.ofNanos(nanos);
  }

  /** Back to the base delay after a success. */
  public void reset() {
    attempts = 0;
  }
}
