package io.kvindex.bench;

import java.util.List;

/**
 * One index behind the {@code bench compare} driver: the same workload is stored, looked up and
 * cleared through these four calls on every index, so the figures differ only by the index.
 * Implementations are thread-safe for {@link #depths} (the driver calls it from several client
 * threads at once, and from an observer during {@link #clear}); the other calls come from one
 * thread at a time.
 */
interface ComparedIndex extends AutoCloseable {

  /** The name the results use ({@code kvindex}, {@code llmd_layout}, {@code in_process}). */
  String name();

  /**
   * Stores every feed's batches as one writing client would: each stream in order, all streams at
   * once. Returns the blocks stored.
   */
  long store(List<ApplyPump.Feed> feeds);

  /**
   * Each candidate's matched depth for one prompt: how many of {@code keys}, from the first, the
   * pod holds in a row. In the order of {@code candidates}.
   */
  int[] depths(long[] keys, List<String> candidates);

  /**
   * Removes every entry of {@code pod} and returns once they are gone; calls {@code step} now and
   * then from the calling thread (after each bounded part of the work), so the driver can read
   * Redis's slow log before it overflows.
   */
  void clear(String pod, Runnable step);

  /** A line saying how this index stores, looks up and clears, for the results. */
  String describe();

  @Override
  void close();
}
