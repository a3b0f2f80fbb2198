package io.kvindex.index;

/**
 * Keeping the index whole over time: garbage collection and the forgetting of departed pods, one
 * bounded step per call in each index group, and noticing when Redis lost the index or failed over.
 *
 * <p>As in every role of the {@link PrefixIndex}, a method named {@code ...Async} returns a future
 * and never blocks; the others block. Implementations are thread-safe.
 */
public interface Maintenance {

  /**
   * One bounded garbage-collection step in an index group (one script call that examines about
   * {@code budget} block fields). Call it in a loop until {@link GcResult#done()}.
   *
   * @param budget 1 to {@link PrefixIndexBuilder#MAX_GC_BUDGET}
   * @throws IllegalArgumentException for a budget outside that range
   */
  GcResult collectGarbage(int group, int budget);

  /**
   * One bounded step of forgetting pods that have left: the stream records (watermark, holder slot)
   * and pod records of pods whose liveness deadline passed more than the departed retention ago
   * ({@link PrefixIndexBuilder#departedRetention}), examining about {@code budget} records. A
   * forgotten stream's slot is retired as a purge would retire it, and its engine-to-token key map
   * is dropped; a pod that comes back starts afresh. Call it in a loop until {@link
   * SweepResult#done()}; without it, every pod ever seen keeps a few records forever.
   */
  SweepResult sweepDeparted(int group, int budget);

  /**
   * Compares every group's epoch and node history with what this process last saw; a change means
   * Redis lost data or failed over, and the {@link #addResetListener listeners} hear of it (once
   * per change). Writers call it periodically: an idle stream would otherwise never notice. Runs
   * under the write retry policy.
   *
   * @return whether some group was reset
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing temporarily
   */
  boolean checkIdentity();

  /**
   * Tells {@code listener} of every reset this process notices (in a write's answer, a lookup or
   * {@link #checkIdentity}), with the group and what changed. Listeners run on the thread that
   * noticed; they must be quick and must not block.
   */
  void addResetListener(ResetListener listener);

  /** Hears of index resets; see {@link #addResetListener}. */
  @FunctionalInterface
  interface ResetListener {
    /**
     * @param group the index group
     * @param what what changed: {@code epoch} (Redis lost the index) or {@code node} (Redis serves
     *     another node history: a failover)
     */
    void reset(int group, String what);
  }

  /** The index group a pod's streams live in. */
  int groupOf(String model, String pod);

  /** How many index groups the index has. */
  int groups();
}
