package io.kvindex.index.redis;

import java.util.HashMap;
import java.util.Map;

/**
 * Pod records of one group as a router last read them (null for a pod with none), all at one slots
 * generation. Never changed once published: a lookup that learns more publishes a copy. Thread-safe
 * when so used.
 */
final class PodRecords {
  /** Records one copy keeps at most; a copy of a fuller one starts afresh. */
  static final int LIMIT = 1 << 16;

  /** A candidate by model and name, the key of the per-router caches. */
  record PodName(String model, String pod) {}

  /** What {@link #usable} gets for a pod not read yet (a pod read with no record maps to null). */
  private static final byte[] UNREAD = new byte[0];

  private final long generation;
  private final Map<PodName, byte[]> byPod;

  PodRecords(long generation) {
    this(generation, new HashMap<>());
  }

  private PodRecords(long generation, Map<PodName, byte[]> byPod) {
    this.generation = generation;
    this.byPod = byPod;
  }

  long generation() {
    return generation;
  }

  /**
   * Whether the cached record may stand for the pod's current one, given that the generation is
   * unchanged: it lists no slot, or its deadline has not passed by Redis's clock.
   */
  boolean usable(PodName pod, long nowMs) {
    byte[] v = byPod.getOrDefault(pod, UNREAD);
    if (v == UNREAD) {
      return false;
    }
    return v == null || PodRecord.listsNoSlot(v) || PodRecord.deadline(v) >= nowMs;
  }

  byte[] get(PodName pod) {
    return byPod.get(pod);
  }

  void put(PodName pod, byte[] record) {
    byPod.put(pod, record);
  }

  PodRecords copy() {
    return new PodRecords(
        generation, byPod.size() >= LIMIT ? new HashMap<>() : new HashMap<>(byPod));
  }

  /** The later of two: the higher generation, else {@code b}, the one just read. */
  static PodRecords newer(PodRecords a, PodRecords b) {
    return a != null && a.generation > b.generation ? a : b;
  }
}
