package io.kvindex.ingester;

import io.kvindex.event.AllBlocksCleared;
import io.kvindex.event.BlockRemoved;
import io.kvindex.event.BlockStored;
import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.StreamId;
import io.kvindex.ingester.stream.MemoryBudget;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The ingester's meters, all named {@code kvindex_ingester_*} in Prometheus. Thread-safe.
 *
 * <p>Counters are looked up once per distinct tag set and cached. The error counters and {@code
 * gaps} exist at zero from the start: a series that is born at 1 shows no {@code increase()}, so an
 * alert on the first error would never fire.
 */
public final class IngesterMetrics {
  /** What was being done when Redis failed: the {@code operation} label of the error counters. */
  public enum Operation {
    APPLY,
    PURGE,
    PUBLISH,
    WATERMARK,
    GC,
    STREAM,
    COORDINATION,
    LEASE,
    HEARTBEAT,
    RECONCILE,
    INCARNATION,
    RESYNC,
    INFERENCE,
    LAG;

    /** The label value: the name in lower case. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final MeterRegistry registry;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<StreamId, AtomicLong> watermarks = new ConcurrentHashMap<>();
  private final Map<Integer, AtomicLong[]> holderSlots = new ConcurrentHashMap<>();
  private final AtomicInteger leasesHeld = new AtomicInteger();
  private final AtomicInteger streamsDiscovered = new AtomicInteger();
  private final AtomicInteger streamsInferred = new AtomicInteger();
  private final Timer lag;
  private final DistributionSummary batchesPerApply;

  public IngesterMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.lag =
        Timer.builder("kvindex.ingester.lag")
            .description("Event timestamp to applied in Redis")
            .publishPercentileHistogram()
            // Exact counts at the marks an operator alerts on: fresh (5 ms) and behind (1 s).
            .serviceLevelObjectives(Duration.ofMillis(5), Duration.ofSeconds(1))
            .minimumExpectedValue(Duration.ofMillis(1))
            .maximumExpectedValue(Duration.ofSeconds(60))
            .register(registry);
    this.batchesPerApply =
        DistributionSummary.builder("kvindex.ingester.apply.batches")
            .description(
                "Batches one apply call carried: above 1 while a stream catches up a backlog")
            .serviceLevelObjectives(1, 2, 4, 8, 16, 32, 64, 128, 256)
            .register(registry);
    Gauge.builder("kvindex.ingester.leases.held", leasesHeld, AtomicInteger::get)
        .description("Stream leases this replica holds")
        .register(registry);
    Gauge.builder("kvindex.ingester.streams.discovered", streamsDiscovered, AtomicInteger::get)
        .description("Streams discovery lists, which the replicas share out through leases")
        .register(registry);
    Gauge.builder("kvindex.ingester.streams.inferred", streamsInferred, AtomicInteger::get)
        .description(
            "Streams this replica owns whose engine's evictions it infers (the engine does not"
                + " publish them all)")
        .register(registry);
    for (Operation operation : Operation.values()) {
      count("kvindex.ingester.errors", "operation", operation.label(), 0);
      count("kvindex.ingester.redis.swallowed", "operation", operation.label(), 0);
    }
    count("kvindex.ingester.gaps", null, null, 0);
    count("kvindex.ingester.inference.stops", "why", "behind", 0);
    for (String outcome : SCRAPE_OUTCOMES) {
      count("kvindex.ingester.scrapes", "outcome", outcome, 0);
    }
  }

  /**
   * The outcomes of a pod's {@code /metrics} scrape: {@code ok}, {@code failed} (refused, reset,
   * not 200), {@code timeout} (no whole page within the scrape timeout), {@code too_large} (past
   * the page limit).
   */
  public static final java.util.List<String> SCRAPE_OUTCOMES =
      java.util.List.of("ok", "failed", "timeout", "too_large");

  /** Counts a pod's {@code /metrics} scrape by its outcome (one of {@link #SCRAPE_OUTCOMES}). */
  public void scrape(String outcome) {
    count("kvindex.ingester.scrapes", "outcome", outcome);
  }

  /** Distinct unknown event tags counted under their own label; the rest count as "other". */
  static final int UNKNOWN_TAG_LABELS = 16;

  static final int TAG_LABEL_CHARS = 32;

  private final Set<String> unknownTags = ConcurrentHashMap.newKeySet();

  public MeterRegistry registry() {
    return registry;
  }

  /** Counts an apply call that carried {@code batches} consecutive batches. */
  public void applyCall(int batches) {
    batchesPerApply.record(batches);
  }

  /** Counts an applied batch's events and blocks, and its lag. */
  public void applied(KvEventBatch batch, long nowMillis) {
    for (KvEvent e : batch.events()) {
      if (e instanceof BlockStored s) {
        count("kvindex.ingester.events", "type", "BlockStored");
        count("kvindex.ingester.blocks", "type", "stored", s.blockHashes().size());
      } else if (e instanceof BlockRemoved r) {
        count("kvindex.ingester.events", "type", "BlockRemoved");
        count("kvindex.ingester.blocks", "type", "removed", r.blockHashes().size());
      } else if (e instanceof AllBlocksCleared) {
        count("kvindex.ingester.events", "type", "AllBlocksCleared");
      }
    }
    for (String tag : batch.skippedTags()) {
      count("kvindex.ingester.events.unknown", "tag", unknownTagLabel(tag));
    }
    long lagMillis = nowMillis - (long) (batch.timestamp() * 1000.0);
    if (batch.timestamp() > 0 && lagMillis >= 0) {
      lag.record(lagMillis, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * The label an unknown event tag is counted under: the tag itself (clipped to {@value
   * #TAG_LABEL_CHARS} characters) for the first {@value #UNKNOWN_TAG_LABELS} distinct ones, then
   * {@code other}, so a publisher sending garbage tags cannot grow the metrics without bound.
   */
  String unknownTagLabel(String tag) {
    String label = tag.length() > TAG_LABEL_CHARS ? tag.substring(0, TAG_LABEL_CHARS) : tag;
    if (unknownTags.contains(label)) {
      return label;
    }
    synchronized (unknownTags) {
      if (unknownTags.size() < UNKNOWN_TAG_LABELS) {
        unknownTags.add(label);
        return label;
      }
    }
    return "other";
  }

  public Timer lag() {
    return lag;
  }

  public void batch(String outcome) {
    batches(outcome, 1);
  }

  /** Counts {@code n} batches with one outcome (a run of batches applied in one call). */
  public void batches(String outcome, int n) {
    count("kvindex.ingester.batches", "outcome", outcome, n);
  }

  public void malformed() {
    count("kvindex.ingester.batches.malformed", null, null);
  }

  public void duplicateLive() {
    count("kvindex.ingester.batches.duplicate.live", null, null);
  }

  public void gap() {
    count("kvindex.ingester.gaps", null, null);
  }

  public void replay(String outcome) {
    count("kvindex.ingester.replays", "outcome", outcome);
  }

  /**
   * Counts a live batch a stream could not hold: {@code stream_bound} (its own count or bytes) or
   * {@code memory_budget} (the process's live half is spent). The gap it leaves is replayed.
   */
  public void dropped(String reason) {
    count("kvindex.ingester.batches.dropped", "reason", reason);
  }

  /** Meters the process's memory budget: what it holds, its peak and its replay slots. */
  public void memory(MemoryBudget budget) {
    Gauge.builder("kvindex.ingester.memory.budget", budget, MemoryBudget::total)
        .description("The process's memory budget (--memory-budget)")
        .baseUnit("bytes")
        .register(registry);
    for (MemoryBudget.Use use : MemoryBudget.Use.values()) {
      Gauge.builder("kvindex.ingester.memory.used", budget, b -> b.used(use))
          .description(
              "Bytes the budget counts now: decoded batches, and messages received and not read"
                  + " yet, by use (live, replay)")
          .tag("use", use.name().toLowerCase(Locale.ROOT))
          .baseUnit("bytes")
          .register(registry);
    }
    Gauge.builder("kvindex.ingester.memory.peak", budget, MemoryBudget::peak)
        .description("The most bytes the budget counted at any time since the process started")
        .baseUnit("bytes")
        .register(registry);
    Gauge.builder("kvindex.ingester.replays.running", budget, MemoryBudget::replaysRunning)
        .description("Streams holding a replay slot (--max-concurrent-replays)")
        .register(registry);
    Gauge.builder("kvindex.ingester.replays.waiting", budget, MemoryBudget::replaysWaiting)
        .description("Streams waiting for a replay slot")
        .register(registry);
    FunctionCounter.builder("kvindex.ingester.replay.waits", budget, MemoryBudget::replayWaits)
        .description("Times a stream began to wait for a replay slot")
        .register(registry);
    count("kvindex.ingester.batches.dropped", "reason", "stream_bound", 0);
    count("kvindex.ingester.batches.dropped", "reason", "memory_budget", 0);
  }

  public void purge(String reason, String outcome) {
    counters
        .computeIfAbsent(
            "purges|" + reason + "|" + outcome,
            k ->
                Counter.builder("kvindex.ingester.purges")
                    .tag("reason", reason)
                    .tag("outcome", outcome)
                    .register(registry))
        .increment();
  }

  /**
   * An index group's holder slots as a GC step just found them: those a new holder could take
   * (freed, or never handed out) and those retired and awaiting cleanup. The gauges appear with a
   * group's first report, so that no group shows 0 available before GC has looked at it.
   */
  public void holderSlots(int group, int available, int dead) {
    AtomicLong[] slots =
        holderSlots.computeIfAbsent(
            group,
            g -> {
              AtomicLong[] pair = {new AtomicLong(), new AtomicLong()};
              String tag = Integer.toString(g);
              Gauge.builder("kvindex.ingester.slots.available", pair[0], AtomicLong::get)
                  .description(
                      "Holder slots of the index group a new stream could take now (freed by GC,"
                          + " or never handed out); at 0 batches that need one are refused")
                  .tag("group", tag)
                  .register(registry);
              Gauge.builder("kvindex.ingester.slots.dead", pair[1], AtomicLong::get)
                  .description("Holder slots of the index group retired and awaiting GC")
                  .tag("group", tag)
                  .register(registry);
              return pair;
            });
    slots[0].set(available);
    slots[1].set(dead);
  }

  /** Counts garbage-collection steps (one gc.lua call each) a round took in a group. */
  public void gcSteps(int steps) {
    count("kvindex.ingester.gc.steps", null, null, steps);
  }

  /** A temporary Redis error given up on: the work is left pending and done again later. */
  public void swallowed(Operation operation) {
    count("kvindex.ingester.redis.swallowed", "operation", operation.label());
  }

  /** An error retrying cannot fix. */
  public void realError(Operation operation) {
    count("kvindex.ingester.errors", "operation", operation.label());
  }

  /**
   * A stream began inferring its engine's evictions: on a router's resync request, or as a new
   * owner of a pod marked so.
   */
  public void inferenceStarted(String why) {
    count("kvindex.ingester.inference.starts", "why", why);
  }

  /**
   * A stream stopped inferring its engine's evictions; {@code why}: {@code behind}, it could not
   * keep up.
   */
  public void inferenceStopped(String why) {
    count("kvindex.ingester.inference.stops", "why", why);
  }

  /** A stream began, or stopped, inferring its engine's evictions. */
  public void inferring(boolean started) {
    streamsInferred.addAndGet(started ? 1 : -1);
  }

  /**
   * An apply call carried changes of an eviction model: blocks it evicted (the index removed them)
   * and blocks an observed request showed the engine still holds (the index lists them again).
   */
  public void inferred(int evicted, int restored) {
    count("kvindex.ingester.inferred.blocks", "change", "evicted", evicted);
    count("kvindex.ingester.inferred.blocks", "change", "restored", restored);
  }

  /**
   * A sampled store of {@code model} checked against the keys routers noted for it: {@code match}
   * when they reproduce its published hashes, else {@code mismatch}. Both series start at 0 for the
   * model, so an alert on the first mismatch fires.
   */
  public void keyCheck(String model, boolean match) {
    Counter matches = keyCheckCounter(model, "match");
    Counter mismatches = keyCheckCounter(model, "mismatch");
    (match ? matches : mismatches).increment();
  }

  private Counter keyCheckCounter(String model, String outcome) {
    return counters.computeIfAbsent(
        "kvindex.ingester.key.checks|" + model + "|" + outcome,
        k ->
            Counter.builder("kvindex.ingester.key.checks")
                .description(
                    "Sampled BlockStored events whose hashes the keys routers noted for the model"
                        + " reproduce (match) or not (mismatch)")
                .tag("model", model)
                .tag("outcome", outcome)
                .register(registry));
  }

  /** Touches (observed requests) read for a stream whose evictions are inferred. */
  public void touches(int n) {
    count("kvindex.ingester.touches", null, null, n);
  }

  public void restart() {
    count("kvindex.ingester.engine.restarts", null, null);
  }

  /** Discovery reported a new incarnation of a stream's engine (it restarted, or was replaced). */
  public void podReplaced() {
    count("kvindex.ingester.pods.replaced", null, null);
  }

  public void reconnect() {
    count("kvindex.ingester.reconnects", null, null);
  }

  public void fenced() {
    count("kvindex.ingester.fenced", null, null);
  }

  /** A coordination round got through its registration (whatever its later steps met). */
  public void coordinationRound() {
    count("kvindex.ingester.coordination.rounds", null, null);
  }

  public void leaseMoved(String how) {
    count("kvindex.ingester.leases.moved", "how", how);
  }

  public void leasesHeld(int n) {
    leasesHeld.set(n);
  }

  /** How many streams discovery lists now (the same on every replica that sees the same pods). */
  public void streamsDiscovered(int n) {
    streamsDiscovered.set(n);
  }

  public void failedStreamsFrom(java.util.function.Supplier<Number> count) {
    Gauge.builder("kvindex.ingester.streams.failed", count)
        .description("Streams whose last attempt met a real error")
        .register(registry);
  }

  public void watermark(StreamId s, long seq) {
    watermarks
        .computeIfAbsent(
            s,
            k -> {
              AtomicLong v = new AtomicLong(-1);
              Gauge.builder("kvindex.ingester.watermark", v, AtomicLong::get)
                  .tag("model", k.model())
                  .tag("pod", k.pod())
                  .tag("rank", Integer.toString(k.dpRank()))
                  .register(registry);
              return v;
            })
        .set(seq);
  }

  /** Drops a stream's watermark gauge once this replica no longer owns the stream. */
  public void forget(StreamId s) {
    AtomicLong v = watermarks.remove(s);
    if (v != null) {
      registry
          .find("kvindex.ingester.watermark")
          .tags("pod", s.pod(), "rank", Integer.toString(s.dpRank()), "model", s.model())
          .gauges()
          .forEach(registry::remove);
    }
  }

  /** The sum of a counter over all its tags, for tests and the benchmark. */
  public double total(String name) {
    return registry.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  /** A counter's value for one tag, for tests. */
  public double value(String name, String tagKey, String tagValue) {
    return registry.find(name).tag(tagKey, tagValue).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private void count(String name, String tagKey, String tagValue) {
    count(name, tagKey, tagValue, 1);
  }

  private void count(String name, String tagKey, String tagValue, double amount) {
    counters
        .computeIfAbsent(
            name + "|" + tagKey + "|" + tagValue,
            k -> {
              Counter.Builder b = Counter.builder(name);
              if (tagKey != null) {
                b.tag(tagKey, tagValue);
              }
              return b.register(registry);
            })
        .increment(amount);
  }
}
