package io.kvindex.simulator;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A gateway's stand-in for running requests when its pods answer at once: how many of the last
 * {@code window} routed requests each pod got. Thread-safe.
 */
public final class RecentLoad {
  /** The window of {@link #RecentLoad()}. */
  public static final int DEFAULT_WINDOW = 64;

  private final int window;
  private final Deque<String> recent = new ArrayDeque<>();
  private final Map<String, Integer> counts = new HashMap<>();

  /** A window of the last {@value #DEFAULT_WINDOW} requests. */
  public RecentLoad() {
    this(DEFAULT_WINDOW);
  }

  public RecentLoad(int window) {
    if (window < 1) {
      throw new IllegalArgumentException("window must be >= 1, got " + window);
    }
    this.window = window;
  }

  /** A request went to {@code pod}. */
  public synchronized void routed(String pod) {
    recent.addLast(pod);
    counts.merge(pod, 1, Integer::sum);
    if (recent.size() > window) {
      counts.merge(recent.removeFirst(), -1, Integer::sum);
    }
  }

  /** The load of each of {@code pods}, in their order. */
  public synchronized Map<String, Integer> of(Collection<String> pods) {
    Map<String, Integer> out = new LinkedHashMap<>();
    pods.forEach(p -> out.put(p, counts.getOrDefault(p, 0)));
    return out;
  }
}
