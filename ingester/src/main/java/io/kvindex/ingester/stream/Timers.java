package io.kvindex.ingester.stream;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * When each of a stream's recurring jobs is next due, on the ingester's ticker: one object for
 * every due time a worker keeps, so that each is set and read the same way. A timer is armed (due
 * at a time) or disarmed (never due). Not thread-safe: the stream's worker thread owns it.
 */
final class Timers {
  /** A stream's due times. */
  enum Due {
    /** The sequencer's work is tried again (after a backoff, or at once when asked). */
    RETRY,
    /** The stream's lag is reported in the index. */
    LAG_REPORT,
    /** The pod's touches are read (inferred evictions). */
    TOUCHES,
    /**
     * Touches are read before an apply from then on (a read lately, or a failure, holds it off).
     */
    TOUCHES_BEFORE_APPLY,
    /** The pod's mark is refreshed (inferred evictions). */
    MARK,
    /** What the model would hand over is compared with what was left in the index. */
    HANDOVER,
    /** A former owner's mark is read again (disarmed unless a read failed). */
    RESUME,
    /** Inference may start again (disarmed unless the stream could not keep up). */
    HELD_OFF
  }

  private final LongSupplier nanos;
  private final long[] at;
  private final boolean[] armed;

  /** Every timer armed and due now, but {@link Due#RESUME} and {@link Due#HELD_OFF}. */
  Timers(LongSupplier nanos) {
    this.nanos = nanos;
    int n = Due.values().length;
    this.at = new long[n];
    this.armed = new boolean[n];
    long now = nanos.getAsLong();
    for (int i = 0; i < n; i++) {
      at[i] = now;
      armed[i] = true;
    }
    disarm(Due.RESUME);
    disarm(Due.HELD_OFF);
  }

  /** Whether the timer is armed and its time has come. */
  boolean due(Due timer) {
    int i = timer.ordinal();
    return armed[i] && nanos.getAsLong() - at[i] >= 0;
  }

  /** Whether the timer is armed and its time has not come yet. */
  boolean pending(Due timer) {
    int i = timer.ordinal();
    return armed[i] && nanos.getAsLong() - at[i] < 0;
  }

  /** Due now. */
  void now(Due timer) {
    at(timer, nanos.getAsLong());
  }

  /** Due {@code after} from now. */
  void in(Due timer, Duration after) {
    at(timer, nanos.getAsLong() + after.toNanos());
  }

  /** Due at {@code nanos} on the ticker. */
  void at(Due timer, long nanos) {
    at[timer.ordinal()] = nanos;
    armed[timer.ordinal()] = true;
  }

  /** Due no sooner than {@code nanos}: a later time already set stands. */
  void notBefore(Due timer, long nanos) {
    int i = timer.ordinal();
    if (!armed[i] || nanos - at[i] > 0) {
      at(timer, nanos);
    }
  }

  /** Never due, until armed again. */
  void disarm(Due timer) {
    armed[timer.ordinal()] = false;
  }
}
