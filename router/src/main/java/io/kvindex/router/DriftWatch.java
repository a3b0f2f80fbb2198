package io.kvindex.router;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Judges, from one router's own observations, which pods the index has drifted from. Pure: no I/O,
 * and the caller passes the time. Thread-safe (one lock).
 *
 * <p>A pod whose last {@code window} observed requests hold at least {@code threshold × window}
 * over-predicted ones is {@link Verdict#OVER}: the index lists blocks its engine no longer holds.
 * As many under-predicted ones make it {@link Verdict#UNDER}: the engine holds blocks the index
 * lost. The natural race of an eviction between lookup and prefill, and the index's own lag, err
 * now and then either way; the threshold is a share of a full window so that they do not add up to
 * a verdict. A verdict empties the pod's window and holds the pod's next verdict back for {@code
 * quiet}, so a pod is judged again only on what came after. The pods tracked are bounded (the least
 * recently observed is forgotten first), as anything keyed by a name a request carries must be.
 */
final class DriftWatch {
  /** Pods tracked at most. */
  static final int MAX_PODS = 4096;

  /** What an observation made of its pod. */
  enum Verdict {
    NONE,
    OVER,
    UNDER
  }

  /**
   * A verdict and the window it came from.
   *
   * @param over over-predicted requests in the window
   * @param under under-predicted requests in the window
   * @param window the window's size
   */
  record Judged(Verdict verdict, int over, int under, int window) {}

  /** A pod of a model: what the loop keys its per-pod state by. */
  record Pod(String model, String pod) {}

  private static final class Window {
    final byte[] signs;
    int size;
    int next;
    int over;
    int under;
    long quietUntil;
    boolean quiet;

    Window(int window) {
      signs = new byte[window];
    }

    void add(int sign) {
      if (size == signs.length) {
        drop(signs[next]);
      } else {
        size++;
      }
      signs[next] = (byte) sign;
      next = (next + 1) % signs.length;
      over += sign > 0 ? 1 : 0;
      under += sign < 0 ? 1 : 0;
    }

    private void drop(byte sign) {
      over -= sign > 0 ? 1 : 0;
      under -= sign < 0 ? 1 : 0;
    }

    void clear() {
      size = 0;
      next = 0;
      over = 0;
      under = 0;
    }
  }

  private final int window;
  private final int needed;
  private final long quietNanos;
  private final Map<Pod, Window> pods =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Pod, Window> eldest) {
          return size() > MAX_PODS;
        }
      };

  /**
   * @param window observations per pod judged together, at least 1
   * @param threshold the share of them that must err one way, in (0, 1]
   * @param quietNanos how long a verdict holds the pod's next one back
   */
  DriftWatch(int window, double threshold, long quietNanos) {
    this.window = window;
    this.needed = Math.max(1, (int) Math.ceil(threshold * window));
    this.quietNanos = quietNanos;
  }

  /** Records one observation of the pod (its prediction error in blocks) and judges the pod. */
  synchronized Judged observe(String model, String pod, int errorBlocks, long nowNanos) {
    Window w = pods.computeIfAbsent(new Pod(model, pod), p -> new Window(window));
    w.add(Integer.signum(errorBlocks));
    if (w.quiet && nowNanos - w.quietUntil < 0) {
      return none(w);
    }
    w.quiet = false;
    if (w.size < window) {
      return none(w);
    }
    Verdict verdict =
        w.over >= needed ? Verdict.OVER : w.under >= needed ? Verdict.UNDER : Verdict.NONE;
    if (verdict == Verdict.NONE) {
      return none(w);
    }
    Judged judged = new Judged(verdict, w.over, w.under, window);
    w.clear();
    w.quiet = true;
    w.quietUntil = nowNanos + quietNanos;
    return judged;
  }

  private Judged none(Window w) {
    return new Judged(Verdict.NONE, w.over, w.under, window);
  }
}
