package io.kvindex.bench;

import io.kvindex.common.Check;
import io.kvindex.index.GcResult;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.PodMatch;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * kvindex as shipped, behind the compare driver: writes through {@link PrefixIndex#apply} (after
 * {@link PrefixIndex#acquireLease}), lookups through {@link PrefixIndex#lookup}, a clear as {@link
 * PrefixIndex#purge} then {@link PrefixIndex#collectGarbage} until done. The lookup budget is long
 * (every lookup is measured in full, as the other indexes have no budget); a lookup that still runs
 * out of it is counted in {@link #incompleteLookups}. Thread-safe.
 */
final class KvindexContender implements ComparedIndex {
  /** Steps between two calls of a clear's {@code step}: well under the slow log's capacity. */
  private static final int GC_CALLS_PER_STEP = 256;

  static final Duration LOOKUP_BUDGET = Duration.ofMillis(250);

  private final PrefixIndex index;
  private final String model;
  private final ApplyPump.Calls calls;
  private final AtomicLong incomplete = new AtomicLong();

  /** As below, one apply call per batch. */
  KvindexContender(RedisConnector connector, String indexName, String model, int groups) {
    this(connector, indexName, model, groups, ApplyPump.Calls.ONE_PER_BATCH);
  }

  /**
   * @param calls how a stream's batches map to apply calls when storing ({@link
   *     ApplyPump.Calls#COALESCED}: as the ingester applies a stream that is behind)
   */
  KvindexContender(
      RedisConnector connector, String indexName, String model, int groups, ApplyPump.Calls calls) {
    Check.notNull(connector, "connector");
    this.calls = Check.notNull(calls, "calls");
    this.model = Check.name(model, "model");
    this.index =
        PrefixIndex.builder()
            .redis(connector)
            .indexName(Check.notBlank(indexName, "indexName"))
            .groups(Check.atLeast(groups, 1, "groups"))
            .podTtl(Duration.ofHours(2))
            .lookupPolicy(RetryPolicy.router().toBuilder().totalBudget(LOOKUP_BUDGET).build())
            .build();
  }

  @Override
  public String name() {
    return "kvindex";
  }

  @Override
  public long store(List<ApplyPump.Feed> feeds) {
    return ApplyPump.run(index, feeds, calls);
  }

  @Override
  public int[] depths(long[] keys, List<String> candidates) {
    LookupResult result = index.lookup(LookupRequest.of(model, KeyMode.ENGINE, keys, candidates));
    int[] depths = new int[candidates.size()];
    if (!result.complete()) {
      incomplete.incrementAndGet();
      return depths;
    }
    for (int c = 0; c < depths.length; c++) {
      PodMatch match = result.pods().get(candidates.get(c));
      depths[c] = match == null ? 0 : match.depth();
    }
    return depths;
  }

  @Override
  public void clear(String pod, Runnable step) {
    StreamId stream = StreamId.of(model, pod);
    Lease token =
        index
            .acquireLease(stream, ApplyPump.OWNER, Duration.ofHours(2))
            .orElseThrow(() -> new IllegalStateException("no lease for " + stream));
    PurgeStatus status = index.purge(stream, token, PurgeMode.KEEP_WATERMARK);
    if (status != PurgeStatus.PURGED) {
      throw new IllegalStateException("purge of " + stream + " returned " + status);
    }
    int group = index.groupOf(model, pod);
    GcResult result;
    long calls = 0;
    do {
      result = index.collectGarbage(group, PurgeBenchmark.GC_BUDGET);
      if (++calls % GC_CALLS_PER_STEP == 0) {
        step.run();
      }
    } while (!result.done());
    step.run();
  }

  /** The index itself, for phases that need more than the driver's calls. */
  PrefixIndex index() {
    return index;
  }

  /** Lookups that ran out of {@link #LOOKUP_BUDGET} (their depths count as 0). */
  long incompleteLookups() {
    return incomplete.get();
  }

  @Override
  public String describe() {
    return "PrefixIndex.builder().build(), one index group, engine keys: "
        + (calls == ApplyPump.Calls.COALESCED
            ? "applyAsync(stream, KeyMode.ENGINE, firstSeq, seq, token, batch) after acquireLease,"
                + " a stream's consecutive batches applied as one call while they fit one chunk"
                + " (as the ingester applies a stream behind its engine), one call in flight per"
                + " stream"
            : "apply(stream, KeyMode.ENGINE, seq, token, batch) after acquireLease, one batch in"
                + " flight per stream")
        + " on the index's one connection; lookup(LookupRequest.of(model, ENGINE, keys, pods)),"
        + " one HMGET; clear = purge(stream, token, KEEP_WATERMARK), then collectGarbage(group, "
        + PurgeBenchmark.GC_BUDGET
        + ") until done; lookup budget "
        + LOOKUP_BUDGET.toMillis()
        + " ms";
  }

  @Override
  public void close() {
    index.close();
  }
}
