package io.kvindex.index.redis;

import io.kvindex.index.IndexMeters;
import io.kvindex.index.Maintenance.ResetListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this process last saw of each group's identity: the epoch {@code init.lua} created with the
 * index (new whenever Redis lost it) and the node history serving it (its replication id, new on a
 * failover). A change means what the index holds may be older than what this process remembers: the
 * listeners hear of it, {@code kvindex.index.resets} counts it and one line is logged. Thread-safe.
 */
final class IndexIdentity {
  private static final Logger log = LoggerFactory.getLogger(IndexIdentity.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final String indexName;
  private final AtomicReferenceArray<String> epochs;
  private final AtomicReferenceArray<String> nodes;
  private final List<ResetListener> listeners = new CopyOnWriteArrayList<>();
  private final Counter epochResets;
  private final Counter nodeResets;

  IndexIdentity(String indexName, int groups, MeterRegistry registry) {
    this.indexName = indexName;
    this.epochs = new AtomicReferenceArray<>(groups);
    this.nodes = new AtomicReferenceArray<>(groups);
    this.epochResets = counter(registry, "epoch");
    this.nodeResets = counter(registry, "node");
  }

  private Counter counter(MeterRegistry registry, String what) {
    return Counter.builder(IndexMeters.RESETS)
        .description(
            "Index groups found reset: Redis lost the index (epoch) or serves another node"
                + " history (node, a failover); what this process remembered was dropped")
        .tag("index", indexName)
        .tag("what", what)
        .register(registry);
  }

  /**
   * What identity.lua answers: the group's epoch ('' for none), the node history serving it, the
   * one its data was written on ('' when not asked for, or none recorded), and whether the node
   * serving it may serve that data as it is: the node it was written on, none recorded, or a node
   * the group's slot moved to with its data whole (a migration; not a failover or a restart, which
   * may have lost writes, until a writer has reset the group).
   */
  record Reply(String epoch, String liveNode, String recordedNode, boolean trusted) {
    static Reply of(List<Object> reply) {
      return new Reply(
          Bytes.text(reply.get(0)),
          Bytes.text(reply.get(1)),
          Bytes.text(reply.get(2)),
          (Long) reply.get(3) == 1);
    }
  }

  /** A fresh epoch for a group that has none. */
  static String newEpoch() {
    byte[] b = new byte[8];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  void addListener(ResetListener listener) {
    listeners.add(listener);
  }

  /** The epoch this process knows for a group (null before it read one). */
  String epoch(int group) {
    return epochs.get(group);
  }

  /**
   * The group's epoch as read now; a change from the one known is a reset.
   *
   * @return whether it changed
   */
  boolean epochIs(int group, String epoch) {
    String before = epochs.getAndSet(group, epoch);
    if (before != null && !before.equals(epoch)) {
      reset(group, "epoch", before, epoch);
      return true;
    }
    return false;
  }

  /**
   * The node history serving the group as read now; a change from the one known is a reset, unless
   * the data is {@code trusted} there (identity.lua): the group's slot moved with its data whole.
   *
   * @return whether the group was reset
   */
  boolean nodeIs(int group, String node, boolean trusted) {
    String before = nodes.getAndSet(group, node);
    if (before == null || before.equals(node)) {
      return false;
    }
    if (trusted) {
      log.info(
          "index '{}' group {}: now served by node history {} (was {}): its slot moved with its"
              + " data whole, which is kept",
          indexName,
          group,
          node,
          before);
      return false;
    }
    reset(group, "node", before, node);
    return true;
  }

  /** A reset noticed elsewhere (a lookup's read), to count and tell. */
  void reset(int group, String what, String before, String now) {
    (what.equals("epoch") ? epochResets : nodeResets).increment();
    log.warn(
        "index '{}' group {}: {} changed from {} to {}: Redis lost data or failed over; what this"
            + " process remembered of the group is dropped and its streams start again from what"
            + " their engines can replay",
        indexName,
        group,
        what,
        before,
        now);
    for (ResetListener l : listeners) {
      l.reset(group, what);
    }
  }
}
