package io.kvindex.index;

/**
 * Names of the meters a Redis-backed {@link PrefixIndex} registers in its connector's registry,
 * each tagged with {@code index} (the index name).
 */
public final class IndexMeters {
  /**
   * Counter: candidates' pod records read with lookups. A router reads each candidate's record
   * about once per pod liveness period, and again after a change to any pod's slots in its group.
   */
  public static final String LOOKUP_POD_RECORDS = "kvindex.index.lookup.pod.records";

  /**
   * Counter: group lookups read a second time because some pod's slots changed since the router
   * cached the records (a purge, a restart, a first store).
   */
  public static final String LOOKUP_REREADS = "kvindex.index.lookup.rereads";

  /**
   * Counter: group lookups that read every block field of the prompt instead of its segments and
   * spans, because the prompt passes a block under which the group holds blocks stored with an
   * unknown parent (an unlocated head), or the keys do not start at a chain's block 0.
   */
  public static final String LOOKUP_BLOCK_READS = "kvindex.index.lookup.block.reads";

  /**
   * Counter: group lookups that read some overflowed segment or span (one past its limit) as its 16
   * or 256 block fields, in the same HMGET as the prompt's other segments.
   */
  public static final String LOOKUP_OVERFLOW_READS = "kvindex.index.lookup.overflow.reads";

  /**
   * Counter: group lookups answered "index unavailable" because the node serving the group is not
   * the one its data was written on (a failover) and no writer has reset the group yet.
   */
  public static final String LOOKUP_NODE_UNVERIFIED = "kvindex.index.lookup.node.unverified";

  /**
   * Counter: index groups found reset, tagged {@code what}: {@code epoch} when Redis lost the index
   * (a restart without persistence, a FLUSHALL), {@code node} when it serves another node history
   * (a failover, which may have lost the last writes). Each is logged once.
   */
  public static final String RESETS = "kvindex.index.resets";

  private IndexMeters() {}
}
