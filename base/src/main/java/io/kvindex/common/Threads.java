package io.kvindex.common;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionHandler;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The executors of every kvindex process: each names its threads, bounds its queue and says what
 * happens to work beyond it. Thread-safe (stateless).
 */
public final class Threads {
  private Threads() {}

  /**
   * Daemon threads named {@code name-1}, {@code name-2}, ...; a single-thread user gets {@code
   * name} itself when {@code numbered} is false.
   */
  public static ThreadFactory named(String name, boolean numbered) {
    Check.notBlank(name, "name");
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, numbered ? name + "-" + n.incrementAndGet() : name);
      t.setDaemon(true);
      return t;
    };
  }

  /** One daemon thread named {@code name}. */
  public static Thread daemon(String name, Runnable body) {
    Thread t = named(name, false).newThread(body);
    return t;
  }

  /**
   * A pool of exactly {@code threads} named threads over a queue of {@code queue} tasks; work past
   * the queue goes to {@code whenFull} (for example {@link ThreadPoolExecutor.CallerRunsPolicy},
   * which slows the submitter down, or {@link ThreadPoolExecutor.AbortPolicy}).
   */
  public static ThreadPoolExecutor bounded(
      String name, int threads, int queue, RejectedExecutionHandler whenFull) {
    Check.atLeast(threads, 1, "threads");
    Check.atLeast(queue, 1, "queue");
    Check.notNull(whenFull, "whenFull");
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(queue),
            named(name, true),
            whenFull);
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /**
   * {@code threads} named threads for periodic and delayed tasks, cancelled tasks removed at once.
   * Its queue is unbounded by design (a scheduler holds what was scheduled); submissions after
   * shutdown are refused with an exception.
   */
  public static ScheduledThreadPoolExecutor scheduled(String name, int threads) {
    Check.atLeast(threads, 1, "threads");
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            threads, named(name, threads > 1), new ThreadPoolExecutor.AbortPolicy());
    s.setRemoveOnCancelPolicy(true);
    return s;
  }
}
