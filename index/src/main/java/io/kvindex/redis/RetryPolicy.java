package io.kvindex.redis;

import io.kvindex.common.Check;
import java.time.Duration;

/**
 * How a Redis call is retried on temporary errors: at most {@code maxAttempts} calls (the first
 * included), waits growing exponentially from {@code initialBackoff} by {@code backoffMultiplier},
 * randomised by ±{@code randomization}, capped at {@code maxBackoff}, and everything (attempts and
 * waits) within {@code totalBudget}. A wait that would end past the budget is not taken.
 *
 * <p>Defaults ({@link #defaults()}, for the write path): 5 attempts, 20 ms initial backoff, ×2,
 * randomization 0.5, max backoff 1 s, total budget 10 s. {@link #router()} (for lookups on the
 * routing path): 3 attempts, 1 ms, ×2, 0.5, max 2 ms, total budget 5 ms.
 *
 * <p>Immutable, thread-safe.
 */
public final class RetryPolicy {

  private static final RetryPolicy DEFAULTS = builder().build();
  private static final RetryPolicy ROUTER =
      builder()
          .maxAttempts(3)
          .initialBackoff(Duration.ofMillis(1))
          .maxBackoff(Duration.ofMillis(2))
          .totalBudget(Duration.ofMillis(5))
          .build();

  private final int maxAttempts;
  private final Duration initialBackoff;
  private final double backoffMultiplier;
  private final double randomization;
  private final Duration maxBackoff;
  private final Duration totalBudget;

  private RetryPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.backoffMultiplier = b.backoffMultiplier;
    this.randomization = b.randomization;
    this.maxBackoff = b.maxBackoff;
    this.totalBudget = b.totalBudget;
  }

  /** The write-path defaults listed above. */
  public static RetryPolicy defaults() {
    return DEFAULTS;
  }

  /** The routing-path profile: a few quick attempts within 5 ms, then "no information". */
  public static RetryPolicy router() {
    return ROUTER;
  }

  /** A builder starting from {@link #defaults()}. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this policy. */
  public Builder toBuilder() {
    return new Builder()
        .maxAttempts(maxAttempts)
        .initialBackoff(initialBackoff)
        .backoffMultiplier(backoffMultiplier)
        .randomization(randomization)
        .maxBackoff(maxBackoff)
        .totalBudget(totalBudget);
  }

  /** All calls, the first included (1 = no retry). */
  public int maxAttempts() {
    return maxAttempts;
  }

  public Duration initialBackoff() {
    return initialBackoff;
  }

  public double backoffMultiplier() {
    return backoffMultiplier;
  }

  /** Each wait is drawn from {@code [w·(1-r), w·(1+r)]}, then capped at {@link #maxBackoff()}. */
  public double randomization() {
    return randomization;
  }

  public Duration maxBackoff() {
    return maxBackoff;
  }

  /** The whole call, attempts and waits, ends within this time. */
  public Duration totalBudget() {
    return totalBudget;
  }

  @Override
  public String toString() {
    return "RetryPolicy[maxAttempts="
        + maxAttempts
        + ", initialBackoff="
        + initialBackoff.toMillis()
        + "ms, x"
        + backoffMultiplier
        + ", randomization="
        + randomization
        + ", maxBackoff="
        + maxBackoff.toMillis()
        + "ms, totalBudget="
        + totalBudget.toMillis()
        + "ms]";
  }

  /** Builds a {@link RetryPolicy}; checks each argument at once. Not thread-safe. */
  public static final class Builder {
    private int maxAttempts = 5;
    private Duration initialBackoff = Duration.ofMillis(20);
    private double backoffMultiplier = 2.0;
    private double randomization = 0.5;
    private Duration maxBackoff = Duration.ofSeconds(1);
    private Duration totalBudget = Duration.ofSeconds(10);

    private Builder() {}

    /** All calls including the first, at least 1. Default 5. */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = Check.atLeast(maxAttempts, 1, "maxAttempts");
      return this;
    }

    /** The first wait, at least 1 ms. Default 20 ms. */
    public Builder initialBackoff(Duration initialBackoff) {
      this.initialBackoff = Check.atLeastOneMilli(initialBackoff, "initialBackoff");
      return this;
    }

    /** Growth factor of the wait, at least 1. Default 2. */
    public Builder backoffMultiplier(double backoffMultiplier) {
      this.backoffMultiplier = Check.between(backoffMultiplier, 1.0, 100.0, "backoffMultiplier");
      return this;
    }

    /** Jitter factor in [0, 1). Default 0.5. */
    public Builder randomization(double randomization) {
      this.randomization = Check.between(randomization, 0.0, 0.99, "randomization");
      return this;
    }

    /** Hard cap on one wait, at least 1 ms. Default 1 s. */
    public Builder maxBackoff(Duration maxBackoff) {
      this.maxBackoff = Check.atLeastOneMilli(maxBackoff, "maxBackoff");
      return this;
    }

    /** Time limit of a whole call, attempts and waits. Default 10 s. */
    public Builder totalBudget(Duration totalBudget) {
      this.totalBudget = Check.positive(totalBudget, "totalBudget");
      return this;
    }

    public RetryPolicy build() {
      if (maxBackoff.compareTo(initialBackoff) < 0) {
        throw new IllegalArgumentException(
            "maxBackoff ("
                + maxBackoff
                + ") must not be below initialBackoff ("
                + initialBackoff
                + ")");
      }
      return new RetryPolicy(this);
    }
  }
}
