package io.kvindex.inspect;

import static io.kvindex.inspect.StoredText.ascii;
import static io.kvindex.inspect.StoredText.text;
import static io.kvindex.inspect.StoredText.utf8;

import io.kvindex.common.Check;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.inspect.IndexReport.Group;
import io.kvindex.inspect.IndexReport.Pod;
import io.kvindex.inspect.IndexReport.Rank;
import io.kvindex.inspect.IndexReport.Replica;
import io.kvindex.redis.ClassifiedError;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisErrorClassifier;
import io.kvindex.redis.RedisOutcome;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * Reads what an index records about itself into an {@link IndexReport}, for {@code kvindex
 * inspect}: read-only (plain read commands, no script), and bounded: per group its small keys
 * (meta, the free list, the dead slots, the counts, the activity), its stream and pod records (at
 * most {@value #MAX_STREAMS} streams in all), per stream its lease and its slot's counts, a few
 * named fields of the blocks hash and a sampled {@code MEMORY USAGE} of each key; never a scan of
 * the blocks hash ({@link GroupReader}). What writers and readers noted about their models is
 * decoded by {@link ModelNotes}. Thread-safe (stateless between calls).
 */
public final class RedisInspector {
  /** Streams one call reads in detail; past it the report is marked truncated. */
  public static final int MAX_STREAMS = 4096;

  /** How long a read is tried again while Redis answers with temporary errors. */
  public static final Duration RETRY_FOR = Duration.ofSeconds(10);

  private static final Duration RETRY_PAUSE = Duration.ofMillis(250);
  private static final RedisErrorClassifier CLASSIFIER = RedisErrorClassifier.standard();

  private final RedisClusterAsyncCommands<byte[], byte[]> redis;
  private final String indexName;

  private RedisInspector(RedisConnector connector, String indexName) {
    this.redis = connector.commands();
    this.indexName = indexName;
  }

  /** An inspector of index {@code indexName} over {@code connector} (which the caller closes). */
  public static RedisInspector of(RedisConnector connector, String indexName) {
    Check.notNull(connector, "connector");
    return new RedisInspector(connector, Check.name(indexName, "indexName"));
  }

  /**
   * Reads the index. A temporary Redis error (a failover, a restart, a reconnect) starts the read
   * again after a pause, for up to {@link #RETRY_FOR}; a real error surfaces at once.
   *
   * @param model only this model's pods, or null for every model
   * @param pod only pods of this name, or null for every pod
   * @throws io.kvindex.redis.RedisUnavailableException if Redis kept failing with temporary errors
   */
  public IndexReport read(String model, String pod) {
    long start = System.nanoTime();
    for (int attempt = 1; ; attempt++) {
      try {
        return readOnce(model, pod);
      } catch (RuntimeException e) {
        ClassifiedError error = CLASSIFIER.classify(e);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        if (!error.isTemporary()) {
          throw e;
        }
        if (elapsed.compareTo(RETRY_FOR) >= 0) {
          throw new RedisOutcome.Swallowed<IndexReport>("inspect", error, attempt, elapsed)
              .exception();
        }
        LockSupport.parkNanos(RETRY_PAUSE.toNanos());
      }
    }
  }

  private IndexReport readOnce(String model, String pod) {
    long now = nowMs();
    Map<String, byte[]> meta0 = text(await(redis.hgetall(new KeySchema(indexName, 1).meta(0))));
    int groups = meta0.containsKey("groups") ? Integer.parseInt(ascii(meta0.get("groups"))) : 0;
    if (groups == 0) {
      return new IndexReport(
          indexName,
          now,
          0,
          List.of(),
          List.of(),
          List.of(),
          List.of(),
          replicas(now, List.of()),
          false);
    }
    KeySchema keys = new KeySchema(indexName, groups);
    ModelNotes notes = new ModelNotes();
    notes.readers(await(redis.hgetall(keys.readerNotes())));
    notes.keyChecks(await(redis.hgetall(keys.keyChecks())));
    List<Group> groupReports = new ArrayList<>();
    List<Pod> pods = new ArrayList<>();
    int[] budget = {MAX_STREAMS};
    boolean truncated = false;
    for (int g = 0; g < groups; g++) {
      if (model != null && pod != null && keys.groupOf(model, pod) != g) {
        continue;
      }
      GroupReader reader = new GroupReader(redis, keys, g, now);
      notes.writers(reader.meta());
      groupReports.add(reader.report());
      truncated |= reader.readPods(model, pod, budget, pods);
    }
    pods.sort(Comparator.comparing(Pod::model).thenComparing(Pod::pod));
    for (Pod p : pods) {
      notes.model(p.model());
    }
    return new IndexReport(
        indexName,
        now,
        groups,
        notes.models(model),
        notes.segmentSlots(),
        pods,
        groupReports,
        replicas(now, pods),
        truncated);
  }

  private long nowMs() {
    List<byte[]> time = await(redis.time());
    return Long.parseLong(ascii(time.get(0))) * 1000 + Long.parseLong(ascii(time.get(1))) / 1000;
  }

  private List<Replica> replicas(long now, List<Pod> pods) {
    Map<String, Integer> leases = new HashMap<>();
    for (Pod p : pods) {
      for (Rank r : p.ranks()) {
        if (r.leaseOwner() != null) {
          leases.merge(r.leaseOwner(), 1, Integer::sum);
        }
      }
    }
    List<Replica> out = new ArrayList<>();
    byte[] key = new KeySchema(indexName, 1).replicas();
    for (ScoredValue<byte[]> v : await(redis.zrangeWithScores(key, 0, MAX_STREAMS - 1))) {
      String name = utf8(v.getValue());
      long expires = (long) v.getScore();
      out.add(new Replica(name, expires, expires >= now, leases.getOrDefault(name, 0)));
    }
    return out;
  }

  private static <T> T await(RedisFuture<T> future) {
    return GroupReader.await(future);
  }
}
