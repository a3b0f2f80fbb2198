package io.kvindex.service;

import java.util.List;

/**
 * The settings every service that embeds a router ({@code kvindex router}, {@code kvindex epp})
 * shares, declared once: the index's Redis and name, the models' keys, the pick policy, the closed
 * loop and the shared load view. Each service adds its own settings beside these, and gives the
 * values to its router's builder. Immutable and thread-safe.
 *
 * <p>The defaults are the router library's ({@code KvRouterBuilder}, {@code PickPolicy}, {@code
 * TtftCostModel}), written out here because the shell cannot depend on the router library (the
 * router's tests run an ingester, which uses the shell); the router service's tests check that they
 * agree.
 */
public final class RouterSettings {
  public final Setting redisUri =
      Setting.of(
          "redis-uri",
          "redis://127.0.0.1:6379",
          "URI",
          "The index's Redis: redis://[user:password@]host:port (rediss:// for TLS),"
              + " redis-cluster://host1:port1,host2:port2, or"
              + " redis-sentinel://[password@]s1:p1,s2:p2#master");
  public final Setting redisTlsCaFile =
      Setting.optional(
          "redis-tls-ca-file",
          "none: the JVM's trust store",
          "FILE",
          "PEM file of the CA certificates a rediss:// server's certificate is checked against");
  public final Setting clusterSeed =
      Setting.optional(
              "cluster-seed",
              "none",
              "URI",
              "A Redis Cluster seed node URI; repeat for more (comma-separated in the"
                  + " environment). Replaces --redis-uri")
          .repeatable(",");
  public final Setting indexName =
      Setting.of("index-name", "default", "NAME", "Index name, as the ingesters use it")
          .flags("--index-name", "--index");
  public final Setting indexGroups =
      Setting.of("index-groups", "1", "N", "Index groups, as the ingesters use them");
  public final Setting model =
      Setting.optional(
              "model",
              "none",
              "NAME=KEYS",
              "A model's key mode, repeatable (comma-separated in the environment):"
                  + " NAME=engine:<algo>[:<seed>]:<blockSize> or NAME=token:<blockSize>, then"
                  + " :eagle when the engines run an EAGLE or MTP draft model")
          .repeatable(",");
  public final Setting defaultKeys;
  public final Setting lookupBudget;
  public final Setting pickPolicy =
      Setting.of(
          "pick-policy",
          "estimated-ttft",
          "estimated-ttft|longest-prefix",
          "How a pod is picked: the least estimated time to first token (its uncached prompt"
              + " tokens plus the prompt tokens queued there, after the guard; see --ttft-cost), or"
              + " longest-prefix (the longest cached prefix among the pods the guard keeps, then"
              + " the least load)");
  public final Setting ttftCost =
      Setting.of(
          "ttft-cost",
          "0.005,4.0E-5,8192,256",
          "STEP_S,TOKEN_S,BATCH_TOKENS,TOKENS_PER_LOAD",
          "The estimated-ttft policy's cost model: seconds per engine step, seconds per prompt"
              + " token computed, prompt tokens per step at most (max_num_batched_tokens), and"
              + " prompt tokens counted queued per unit of load when the load carries no queued"
              + " tokens; defaults for Llama-3.1-8B-Instruct, BF16, one H100");
  public final Setting imbalanceAbsolute =
      Setting.of(
          "imbalance-absolute", "16", "LOAD", "Pick guard: load units above the least loaded pod");
  public final Setting imbalanceRatio =
      Setting.of(
          "imbalance-ratio", "1.5", "FACTOR", "Pick guard: factor over the least loaded pod");
  public final Setting driftWindow =
      Setting.of(
          "drift-window",
          "64",
          "N",
          "A pod's latest observed requests that are judged together (4 to 4096)");
  public final Setting driftThreshold =
      Setting.of(
          "drift-threshold",
          "0.08",
          "SHARE",
          "Share of a full drift window over-predicted that makes a pod suspect and asks for its"
              + " resync (or under-predicted, reported only), in (0, 1]");
  public final Setting resyncInterval =
      Setting.of(
          "resync-interval",
          "30s",
          "DURATION",
          "A suspect pod is resynced at most once per interval, whichever router or picker asks"
              + " (its ingester infers its engine's evictions from then on, or purges and replays"
              + " its ring); engine-keyed models only; 0 turns resyncs off");
  public final Setting sharedLoad;
  public final Setting sharedLoadTtl =
      Setting.of(
          "shared-load-ttl",
          "10s",
          "DURATION",
          "With --shared-load: how long this process's share stands without being rewritten"
              + " (every third of it), so a process that dies leaves the view within it; 300ms to"
              + " 10m; the processes' clocks must agree to well within it");
  public final Setting sharedLoadMinAge =
      Setting.of(
          "shared-load-min-age",
          "5ms",
          "DURATION",
          "With --shared-load: how old the view must be before a lookup reads it again (lookups"
              + " within it use the last one read; concurrent lookups share one read); 0 to 1s");
  public final Setting routerId =
      Setting.optional(
          "router-id",
          "host name, process id and a random suffix",
          "NAME",
          "With --shared-load: this process's name in the view; unique in the fleet");

  /**
   * The shared settings, worded for one service.
   *
   * @param unknownModels what happens to a request for a model neither {@code --model} nor {@code
   *     --default-keys} names (the default of {@code --default-keys})
   * @param pastBudget what a lookup past its budget answers
   * @param sharedLoad what {@code --shared-load} does in this service
   */
  public RouterSettings(String unknownModels, String pastBudget, String sharedLoad) {
    this.defaultKeys =
        Setting.optional(
            "default-keys",
            "none: " + unknownModels,
            "KEYS",
            "Key mode of models not named by --model");
    this.lookupBudget =
        Setting.of(
            "lookup-budget",
            "5ms",
            "DURATION",
            "Longest time one index lookup may take, retries included; past it " + pastBudget);
    this.sharedLoad = Setting.of("shared-load", "false", "BOOL", sharedLoad);
  }

  /** Every shared setting, in help order. */
  public List<Setting> all() {
    return List.of(
        redisUri,
        redisTlsCaFile,
        clusterSeed,
        indexName,
        indexGroups,
        model,
        defaultKeys,
        lookupBudget,
        pickPolicy,
        ttftCost,
        imbalanceAbsolute,
        imbalanceRatio,
        driftWindow,
        driftThreshold,
        resyncInterval,
        sharedLoad,
        sharedLoadTtl,
        sharedLoadMinAge,
        routerId);
  }

  /** A number as help shows it: whole numbers without a fraction. */
  public static String number(double value) {
    return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
  }
}
