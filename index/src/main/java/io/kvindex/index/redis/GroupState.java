package io.kvindex.index.redis;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What this router knows of one index group, learned across lookups: the pod records last read and
 * the slots generation they were read at, the group's unlocated heads, which segment fields
 * overflowed, the epoch last seen (to see a reset), and when a read of the group was last answered
 * (to verify the node after a pause). Every lookup of the group reads and updates it; nothing else
 * does. Thread-safe: lookups of the group run at once.
 */
final class GroupState {
  /**
   * A pause in a group's answered reads longer than this, and the next lookup first runs
   * identity.lua, which checks that the node serving the group is the one its data was written on;
   * so do a failed read and a reconnect of the connector. A failover pauses the reads of a router
   * that was not reading (a primary is declared failed after cluster-node-timeout or Sentinel's
   * down-after-milliseconds, 1 s at the least in practice) and fails or reconnects those of one
   * that was, so a router never takes a promoted replica's data, which may lack the last
   * acknowledged writes, on trust before a writer has reset the group (node.lua, adoptNode).
   */
  static final long VERIFY_AFTER_NANOS = 500_000_000L;

  /** How often, at most, a group's last answered read is noted: 10 ms. */
  static final long ANSWERED_EVERY_NANOS = 10_000_000L;

  /** Overflowed segment fields remembered; the set starts afresh past this size. */
  private static final int OVERFLOWED_LIMIT = 1 << 16;

  private static final byte[] NO_VALUE = new byte[0];

  /** The index group. */
  final int g;

  /** Told when the epoch changes: the group, the epoch before, the epoch now. */
  interface ResetListener {
    void reset(int g, byte[] before, byte[] now);
  }

  private final ResetListener onReset;

  /** The pod records last read and the slots generation they were read at (null before any). */
  private final AtomicReference<PodRecords> records = new AtomicReference<>();

  /** The unlocated heads the last read found: a prompt with one is read by block fields. */
  private volatile UnlocatedHeads unlocated = UnlocatedHeads.NONE;

  /** Segment fields found overflowed: lookups read those segments' block fields instead. */
  private final Map<ByteBuffer, Boolean> overflowed = new ConcurrentHashMap<>();

  /** The epoch field as the last head read found it (empty for none; null before the first). */
  private final AtomicReference<byte[]> seenEpoch = new AtomicReference<>();

  /** System.nanoTime of the last answered read (0: none yet, or a read failed since). */
  private volatile long lastAnswered;

  /** The connector's activations when the lookup last answered began. */
  private volatile long answeredOn;

  GroupState(int g, ResetListener onReset) {
    this.g = g;
    this.onReset = onReset;
  }

  /** The pod records last read, or null before any (or after a reset). */
  PodRecords records() {
    return records.get();
  }

  /** Replaces the cached records: the slots generation moved since they were read. */
  void replaceRecords(PodRecords fresh) {
    records.set(fresh);
  }

  /** Keeps the newer of the cached records and {@code learned}. */
  void learnRecords(PodRecords learned) {
    records.accumulateAndGet(learned, PodRecords::newer);
  }

  /** The unlocated heads as this router last read them. */
  UnlocatedHeads unlocatedHeads() {
    return unlocated;
  }

  /** The unlocated heads as a read just found them ({@code value}: the field's value). */
  UnlocatedHeads unlocatedHeads(byte[] value) {
    UnlocatedHeads known = unlocated;
    if (known.readAs(value)) {
      return known;
    }
    UnlocatedHeads now = UnlocatedHeads.of(value);
    unlocated = now;
    return now;
  }

  boolean overflowed(byte[] segmentField) {
    // Most indexes never overflow a segment: no field needs hashing then.
    return !overflowed.isEmpty() && overflowed.containsKey(ByteBuffer.wrap(segmentField));
  }

  void markOverflowed(byte[] segmentField) {
    if (overflowed.size() >= OVERFLOWED_LIMIT) {
      overflowed.clear();
    }
    overflowed.put(ByteBuffer.wrap(segmentField), Boolean.TRUE);
  }

  /**
   * The epoch field a head read found. A change from the last read means Redis lost the group, or a
   * writer reset it after a failover (adoptNode binds a new epoch to the new node history): all
   * this router learned of the group is dropped (the records, the unlocated heads, the overflowed
   * segments), and the change is told. A node history that changed with the same epoch is the same
   * data on another node (its slot moved whole): nothing cached is wrong there.
   *
   * @return whether the group was reset
   */
  boolean identityIs(byte[] epochField) {
    byte[] epoch = epochField == null ? NO_VALUE : epochField;
    if (Arrays.equals(seenEpoch.get(), epoch)) {
      return false; // as last read: nothing is written, so lookups share this state read-only
    }
    byte[] epochBefore = seenEpoch.getAndSet(epoch);
    // A field read empty before is a first sight (a new index, or one just found reset), not a
    // change: only a value replaced by another (or by none) is.
    if (epochBefore == null || epochBefore.length == 0 || Arrays.equals(epochBefore, epoch)) {
      return false;
    }
    records.set(null);
    unlocated = UnlocatedHeads.NONE;
    overflowed.clear();
    onReset.reset(g, epochBefore, epoch);
    return true;
  }

  /**
   * Whether the group's next read must verify the node: none answered yet, a failed read, a pause
   * or a reconnect since ({@code activations}: the connector's, now).
   */
  boolean mustVerify(long activations) {
    long last = lastAnswered;
    return last == 0 || System.nanoTime() - last > VERIFY_AFTER_NANOS || answeredOn != activations;
  }

  /**
   * A lookup of the group that began at {@code activationsAtStart} was answered. The time is noted
   * at most every {@value #ANSWERED_EVERY_NANOS} ns, so that lookups in a row do not all write the
   * same field: a pause may be taken for one that much sooner, never later.
   */
  void answered(long activationsAtStart) {
    if (answeredOn != activationsAtStart) {
      answeredOn = activationsAtStart;
    }
    long now = System.nanoTime();
    long last = lastAnswered;
    if (last == 0 || now - last > ANSWERED_EVERY_NANOS) {
      lastAnswered = now == 0 ? 1 : now;
    }
  }

  /** A read of the group failed: the next one verifies the node. */
  void unanswered() {
    lastAnswered = 0;
  }

  /** The states of {@code groups} index groups, each telling {@code onReset}. */
  static GroupState[] of(int groups, ResetListener onReset) {
    GroupState[] states = new GroupState[groups];
    for (int g = 0; g < groups; g++) {
      states[g] = new GroupState(g, onReset);
    }
    return states;
  }
}
