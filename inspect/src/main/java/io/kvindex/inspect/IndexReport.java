package io.kvindex.inspect;

import io.kvindex.index.KeyCheckNote;
import java.util.List;
import java.util.Map;

/**
 * What {@link RedisInspector} read of one index, as the index's own keys record it (never a
 * reader's flags). Times are Redis's clock in ms since the epoch; {@code null} means the index
 * records nothing of it. Immutable and thread-safe.
 *
 * @param index the index name
 * @param nowMs Redis's clock when the report was read: deadlines and ages are relative to it
 * @param groups the index's group count, as group 0 records it (0: no index of that name)
 * @param models every model the writers, the routers or the pod records mention
 * @param segmentSlots the segment limits writers noted they apply with (more than one: writers
 *     disagree, and lookups of a segment one writer overflowed fall back to block fields)
 * @param pods the pods (filtered), each with its ranks
 * @param groupReports one per group
 * @param replicas the ingester replicas registered, with the leases each holds
 * @param truncated true when the index has more streams than one call reads in detail ({@value
 *     RedisInspector#MAX_STREAMS}): narrow with a model or pod
 */
public record IndexReport(
    String index,
    long nowMs,
    int groups,
    List<ModelKeys> models,
    List<Integer> segmentSlots,
    List<Pod> pods,
    List<Group> groupReports,
    List<Replica> replicas,
    boolean truncated) {

  public IndexReport {
    models = List.copyOf(models);
    segmentSlots = List.copyOf(segmentSlots);
    pods = List.copyOf(pods);
    groupReports = List.copyOf(groupReports);
    replicas = List.copyOf(replicas);
  }

  /** Whether an index of that name exists in this Redis. */
  public boolean exists() {
    return groups > 0;
  }

  /**
   * How one model is keyed, by the writers (the ingesters' key modes) and by the readers (each
   * router's keys), and what disagrees.
   *
   * @param model the model
   * @param writerModes the key modes (engine, token) writers applied the model's batches in
   * @param readerKeys the keys routers score it with ({@code engine:<algorithm>:<seed>:<block
   *     size>}, {@code token:<block size>}), their default keys included when they have none for it
   * @param problem what disagrees, or null: a router keys it in a mode no writer applies, or
   *     writers apply it in two modes
   * @param keyCheck what the ingesters' key check last found for the model (the engines' published
   *     hashes recomputed with the routers' keys), or null when it has not run
   */
  public record ModelKeys(
      String model,
      List<String> writerModes,
      List<String> readerKeys,
      String problem,
      KeyCheckNote keyCheck) {
    public ModelKeys {
      writerModes = List.copyOf(writerModes);
      readerKeys = List.copyOf(readerKeys);
    }
  }

  /**
   * One pod's record and streams.
   *
   * @param model the model
   * @param pod the pod
   * @param group its index group
   * @param livenessDeadlineMs its pod record's deadline, or null with no record
   * @param live whether the deadline has not passed: routers score only live pods
   * @param inferredCapacityBlocks the capacity its owners model when they infer its engine's
   *     evictions (the pod's mark), or null when they do not
   * @param ranks its streams, by rank
   */
  public record Pod(
      String model,
      String pod,
      int group,
      Long livenessDeadlineMs,
      boolean live,
      Integer inferredCapacityBlocks,
      List<Rank> ranks) {
    public Pod {
      ranks = List.copyOf(ranks);
    }
  }

  /**
   * One stream (pod and data-parallel rank).
   *
   * @param rank the data-parallel rank
   * @param slot its holder slot (0: none, it holds nothing)
   * @param staged whether a rebuild is replaying into the slot: the pod record does not list it
   *     yet, so routers do not see its blocks until the rebuild is published
   * @param watermark the last batch sequence applied, or null for none (it starts afresh)
   * @param batchInProgress a batch applied in several calls and left between two: its sequence and
   *     the blocks of its call done, as {@code <seq>:<blocks done>}; or null
   * @param leaseOwner the ingester replica whose lease covers it, or null for none
   * @param leaseTtlMs the lease's remaining time to live, or null without a lease
   * @param blocks the block entries its slot holds, in all and per tier
   * @param lastApplyMs when its last chunk was applied, or null if never (since sweep)
   * @param lastPurge its last purge, or null if never
   */
  public record Rank(
      int rank,
      int slot,
      boolean staged,
      Long watermark,
      String batchInProgress,
      String leaseOwner,
      Long leaseTtlMs,
      Blocks blocks,
      Long lastApplyMs,
      Purge lastPurge) {}

  /** Block entries a slot holds: in all, and holding each tier. */
  public record Blocks(long all, long gpu, long cpu, long storage, long other) {
    static final Blocks NONE = new Blocks(0, 0, 0, 0, 0);
  }

  /**
   * A purge (or an AllBlocksCleared applied) and its cleanup.
   *
   * @param atMs when
   * @param slotRetired the slot it retired (0: the stream held none)
   * @param cleanupPending whether that slot still awaits garbage collection (its entries still
   *     stand in the blocks hash, though no lookup counts them)
   */
  public record Purge(long atMs, int slotRetired, boolean cleanupPending) {}

  /**
   * One index group.
   *
   * @param group its number
   * @param epoch its epoch (new whenever Redis lost it), or null before any service initialised it
   * @param version the stored format version, or null for a group an earlier version created (its
   *     block counts are not exact)
   * @param slotsHandedOut holder slots ever handed out (4095 at most, reused once freed)
   * @param freeSlots slots freed and ready for reuse
   * @param deadSlots retired slots awaiting garbage collection, each with the GC pass it died in
   * @param gcPass GC passes started
   * @param gcPassInProgress whether a pass is under way (a dead slot is freed once a pass started
   *     after its death completes)
   * @param unlocatedBlocks block fields stored with a parent the index did not know (lookups whose
   *     prompt passes the block they hang under read block fields instead of segments)
   * @param overflowedSegments segments apply marked overflowed (read by block fields)
   * @param speculativeFields segments and spans routers recorded speculative routes through (at
   *     most {@code RedisSpeculation.FIELDS_PER_GROUP}), whether or not their routes expired yet
   * @param memoryBytes {@code MEMORY USAGE} (sampled) of each of the group's keys that exists
   */
  public record Group(
      int group,
      String epoch,
      Integer version,
      long slotsHandedOut,
      long freeSlots,
      List<DeadSlot> deadSlots,
      long gcPass,
      boolean gcPassInProgress,
      long unlocatedBlocks,
      long overflowedSegments,
      long speculativeFields,
      Map<String, Long> memoryBytes) {
    public Group {
      deadSlots = List.copyOf(deadSlots);
      memoryBytes = Map.copyOf(memoryBytes);
    }
  }

  /** A retired slot and the GC pass it died in: it is freed after a later pass completes. */
  public record DeadSlot(int slot, long diedInPass) {}

  /**
   * An ingester replica.
   *
   * @param replica its name
   * @param expiresAtMs when its registration lapses unless renewed
   * @param live whether it has not lapsed
   * @param leases the stream leases it holds among the streams read
   */
  public record Replica(String replica, long expiresAtMs, boolean live, int leases) {}
}
