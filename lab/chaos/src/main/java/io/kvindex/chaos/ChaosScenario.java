package io.kvindex.chaos;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The faults {@code kvindex chaos} injects, one per run of the whole stack. A <b>strict</b>
 * scenario is one where slot reuse, counter regression or resurrected entries would show: no false
 * positive is allowed at any time. In the others every false positive must end within 2 s of the
 * fault's end. Immutable.
 */
enum ChaosScenario {
  BASELINE(Topology.STANDALONE, true, true, "no fault: the auditor's noise floor under load"),
  REDIS_RESTART_EMPTY(
      Topology.STANDALONE, true, true, "Redis killed (SIGKILL) and restarted with no data"),
  REDIS_RESTART_AOF_MID_GC(
      Topology.STANDALONE_AOF,
      true,
      false,
      "two pods' caches cleared, then Redis killed in the middle of their cleanup and restarted"
          + " from its append-only file"),
  REDIS_PAUSED(Topology.STANDALONE, false, true, "Redis stopped (SIGSTOP) for 5 s"),
  FLUSHALL(Topology.STANDALONE, true, true, "FLUSHALL: Redis loses the index under load"),
  CLUSTER_PRIMARY_KILLED(
      Topology.CLUSTER,
      true,
      false,
      "the primary serving the index killed mid-ingest; its replica is promoted"),
  CLUSTER_PRIMARY_KILLED_MID_GC(
      Topology.CLUSTER,
      true,
      false,
      "two pods' caches cleared, then the primary killed in the middle of their cleanup"),
  CLUSTER_FAILOVER(
      Topology.CLUSTER,
      true,
      false,
      "CLUSTER FAILOVER: the index's primary hands over to its replica"),
  SLOT_MIGRATION(
      Topology.CLUSTER,
      false,
      false,
      "the index group's hash slot moved to another primary under load, as redis-cli --cluster"
          + " reshard does (SETSLOT IMPORTING and MIGRATING, MIGRATE of its keys one at a time,"
          + " 100 ms apart, SETSLOT NODE): nothing is lost, so nothing may be reset"),
  SENTINEL_PROMOTION(
      Topology.SENTINEL, true, false, "Sentinel promotes the replica of the primary in use"),
  INGESTER_PAUSED(
      Topology.STANDALONE,
      false,
      true,
      "an ingester frozen past its lease while its pods go idle, then resumed: it is fenced"),
  INGESTER_PAUSED_MID_BATCH(
      Topology.STANDALONE,
      true,
      false,
      "evictions inferred; an ingester applying calls of 64 blocks frozen past its lease between"
          + " two calls of a 300-block prefill, its streams taken over by one applying calls of"
          + " 128"),
  INGESTER_KILLED(
      Topology.STANDALONE, false, false, "an ingester killed; its leases expire and move"),
  ZMQ_FAULTS(
      Topology.STANDALONE,
      false,
      false,
      "1 % of live messages lost, 1 % sent twice, 1 % swapped with the next"),
  MALFORMED_PAYLOADS(
      Topology.STANDALONE,
      false,
      true,
      "1 % of live payloads damaged on the way (the replay rings keep them intact)"),
  POISON_BATCH(
      Topology.STANDALONE,
      false,
      true,
      "one batch the index can never apply (group_idx over 65535) from one pod"),
  SLEEP_ACROSS_RESTART(
      Topology.STANDALONE,
      true,
      false,
      "a pod put to sleep, Redis restarted empty while it sleeps, then the pod woken"),
  REDIS_MAXMEMORY(
      Topology.STANDALONE,
      false,
      false,
      "Redis at maxmemory with noeviction (writes refused: a real error), then memory freed"),
  RING_REBUILD_HEAP_CAPPED(
      Topology.STANDALONE,
      true,
      false,
      "8 pods' full replay rings of 256-block batches with their token ids rebuilt by one"
          + " ingester in a JVM of its own at a heap cap, from its start and again after FLUSHALL"
          + " (rings of 10 000 at -Xmx384m; --quick: 1 000 at -Xmx128m)"),
  SLOW_METRICS(
      Topology.STANDALONE,
      false,
      true,
      "one ingester owning every pod; one pod's /metrics sends its headers, then a byte every"
          + " 500 ms, never ending, while the load stops and another pod is put to sleep and a third"
          + " restarted: the ingester must see both within a scrape timeout and a reconcile"
          + " interval"),
  TOUCH_FLOOD(
      Topology.STANDALONE,
      false,
      false,
      "every pod's evictions inferred, then a flood of /observe calls for them: the run's prompts"
          + " claimed cached to their last block, and the longest prompts the routers take, as"
          + " block keys never stored"),
  WORST_SCORE(
      Topology.STANDALONE,
      false,
      false,
      "the worst /score the routers' limits allow, looped: 16 384 block keys, 1 024 candidates"
          + " with live records, a speculative route recorded for each; then /score calls naming"
          + " made-up pods, each asking for its route to be recorded"),
  HOSTILE_SCORE_FLOOD(
      Topology.STANDALONE,
      false,
      false,
      "a flood of hostile /score requests: oversized bodies, huge record_ttl_ms, 10 kB names"),
  DEMO_CLUSTER_PRIMARY_LOST(
      Topology.CLUSTER_AOF,
      false,
      false,
      "the demo itself (its reset, restart and ingester kill included) on a cluster whose primary"
          + " of the index is killed (SIGKILL) 18/40 of the way through and stays dead; its"
          + " replica is promoted");

  /** Where the scenario runs. */
  enum Topology {
    STANDALONE,
    /** Standalone with appendonly yes, appendfsync always. */
    STANDALONE_AOF,
    /** 3 primaries, 3 replicas. */
    CLUSTER,
    /**
     * 3 primaries, 3 replicas, cluster-node-timeout 2000, appendonly yes, noeviction: the cluster a
     * user would run the demo on.
     */
    CLUSTER_AOF,
    /** A primary, a replica and 3 Sentinels. */
    SENTINEL
  }

  final Topology topology;
  final boolean strict;
  final boolean quick;
  final String description;

  ChaosScenario(Topology topology, boolean strict, boolean quick, String description) {
    this.topology = topology;
    this.strict = strict;
    this.quick = quick;
    this.description = description;
  }

  /** The name on the command line: {@code redis-restart-empty}. */
  String cliName() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  static ChaosScenario named(String name) {
    for (ChaosScenario s : values()) {
      if (s.cliName().equals(name)) {
        return s;
      }
    }
    throw new IllegalArgumentException(
        "unknown scenario '"
            + name
            + "'; the scenarios are "
            + Arrays.stream(values()).map(ChaosScenario::cliName).toList());
  }

  /**
   * Scenarios run only when named with {@code --scenario}: they take far longer than the others (a
   * heap-capped ring rebuild runs for a quarter of an hour).
   */
  static final Set<ChaosScenario> ONLY_WHEN_NAMED = EnumSet.of(RING_REBUILD_HEAP_CAPPED);

  static List<ChaosScenario> quickOnes() {
    return Arrays.stream(values()).filter(s -> s.quick).toList();
  }

  /** What a run that names no scenario runs: every one but {@link #ONLY_WHEN_NAMED}. */
  static List<ChaosScenario> everyRun() {
    return Arrays.stream(values()).filter(s -> !ONLY_WHEN_NAMED.contains(s)).toList();
  }
}
