package io.kvindex.inspect;

import io.kvindex.common.Await;
import io.kvindex.common.Check;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.index.redis.PodRecord;
import io.kvindex.index.redis.StoredValues;
import io.kvindex.index.redis.StreamRecord;
import io.kvindex.inspect.IndexReport.Blocks;
import io.kvindex.inspect.IndexReport.DeadSlot;
import io.kvindex.inspect.IndexReport.Group;
import io.kvindex.inspect.IndexReport.ModelKeys;
import io.kvindex.inspect.IndexReport.Pod;
import io.kvindex.inspect.IndexReport.Purge;
import io.kvindex.inspect.IndexReport.Rank;
import io.kvindex.inspect.IndexReport.Replica;
import io.kvindex.redis.ClassifiedError;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisErrorClassifier;
import io.kvindex.redis.RedisOutcome;
import io.lettuce.core.KeyValue;
import io.lettuce.core.MapScanCursor;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

/**
 * Reads what an index records about itself into an {@link IndexReport}, for {@code kvindex
 * inspect}: read-only (plain read commands, no script), and bounded: per group its small keys
 * (meta, the free list, the dead slots, the counts, the activity), its stream and pod records (at
 * most {@value #MAX_STREAMS} streams in all), per stream its lease and its slot's counts, a few
 * named fields of the blocks hash and a sampled {@code MEMORY USAGE} of each key; never a scan of
 * the blocks hash. Thread-safe (stateless between calls).
 */
public final class RedisInspector {
  /** Streams one call reads in detail; past it the report is marked truncated. */
  public static final int MAX_STREAMS = 4096;

  /** How long a read is tried again while Redis answers with temporary errors. */
  public static final Duration RETRY_FOR = Duration.ofSeconds(10);

  private static final Duration RETRY_PAUSE = Duration.ofMillis(250);
  private static final RedisErrorClassifier CLASSIFIER = RedisErrorClassifier.standard();
  private static final int SCAN_COUNT = 512;
  private static final String[] TIERS = {"blocks", "gpu", "cpu", "storage", "other"};

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
    Notes notes = new Notes();
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
      GroupReader reader = new GroupReader(keys, g, now);
      notes.writers(reader.meta);
      groupReports.add(reader.report());
      truncated |= reader.readPods(model, pod, budget, pods);
    }
    pods.sort(Comparator.comparing(Pod::model).thenComparing(Pod::pod));
    for (Pod p : pods) {
      notes.models.add(p.model());
    }
    return new IndexReport(
        indexName,
        now,
        groups,
        notes.models(model),
        new ArrayList<>(notes.segmentSlots),
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

  /** One group's reads. */
  private final class GroupReader {
    final KeySchema keys;
    final int g;
    final long now;
    final Map<String, byte[]> meta;
    final Map<Integer, Long> dead = new TreeMap<>();

    GroupReader(KeySchema keys, int g, long now) {
      this.keys = keys;
      this.g = g;
      this.now = now;
      this.meta = text(await(redis.hgetall(keys.meta(g))));
      text(await(redis.hgetall(keys.dead(g))))
          .forEach((slot, pass) -> dead.put(Integer.parseInt(slot), decimal(pass)));
    }

    Group report() {
      RedisFuture<Long> free = redis.llen(keys.free(g));
      RedisFuture<List<KeyValue<byte[], byte[]>>> named =
          redis.hmget(keys.blocksKey(g), KeySchema.UNLOCATED_FIELD);
      RedisFuture<byte[]> overflowed = redis.hget(keys.counts(g), KeySchema.OVERFLOWED_FIELD);
      RedisFuture<Long> routes = redis.zcard(keys.speculativeOrder(g));
      Map<String, RedisFuture<Long>> memory = new LinkedHashMap<>();
      for (String name : List.of("meta", "streams", "pods", "blocks", "free", "dead")) {
        memory.put(name, redis.memoryUsage(keys.key(g, name)));
      }
      memory.put("counts", redis.memoryUsage(keys.counts(g)));
      memory.put("activity", redis.memoryUsage(keys.activity(g)));
      memory.put("spec:routes", redis.memoryUsage(keys.speculativeRoutesKey(g)));
      memory.put("spec:order", redis.memoryUsage(keys.speculativeOrder(g)));
      Map<String, Long> bytes = new TreeMap<>();
      memory.forEach(
          (name, f) -> {
            Long used = await(f);
            if (used != null) {
              bytes.put(name, used);
            }
          });
      List<DeadSlot> deadSlots = new ArrayList<>();
      dead.forEach((slot, pass) -> deadSlots.add(new DeadSlot(slot, pass)));
      String version = ascii(meta.get("version"));
      return new Group(
          g,
          ascii(meta.get("epoch")),
          version == null ? null : Integer.valueOf(version),
          decimal(meta.get("next")),
          await(free),
          deadSlots,
          decimal(meta.get("pass")),
          meta.containsKey("cursor"),
          decimal(value(await(named).get(0))),
          decimal(await(overflowed)),
          await(routes),
          bytes);
    }

    /** Adds the group's pods that pass the filter; true when the stream budget ran out. */
    boolean readPods(String model, String pod, int[] budget, List<Pod> out) {
      Map<ByteBuffer, byte[]> records = scan(keys.pods(g), MAX_STREAMS);
      Map<ByteBuffer, byte[]> streams = scan(keys.streams(g), budget[0] + 1);
      boolean truncated = streams.size() > budget[0];
      Map<ByteBuffer, List<Map.Entry<Integer, byte[]>>> byPod = new LinkedHashMap<>();
      records.keySet().forEach(field -> byPod.put(field, new ArrayList<>()));
      for (Map.Entry<ByteBuffer, byte[]> s : streams.entrySet()) {
        byte[] field = bytes(s.getKey());
        ByteBuffer podField = ByteBuffer.wrap(field, 0, field.length - 4).slice();
        int rank = ByteBuffer.wrap(field, field.length - 4, 4).getInt();
        byPod.computeIfAbsent(podField, k -> new ArrayList<>()).add(Map.entry(rank, s.getValue()));
      }
      Map<String, byte[]> activity = text(await(redis.hgetall(keys.activity(g))));
      for (Map.Entry<ByteBuffer, List<Map.Entry<Integer, byte[]>>> e : byPod.entrySet()) {
        byte[] podField = bytes(e.getKey());
        String[] name = names(podField);
        if ((model != null && !model.equals(name[0])) || (pod != null && !pod.equals(name[1]))) {
          continue;
        }
        if (budget[0] - e.getValue().size() < 0) {
          return true;
        }
        budget[0] -= e.getValue().size();
        out.add(pod(name, podField, records.get(e.getKey()), e.getValue(), activity));
      }
      return truncated;
    }

    private Pod pod(
        String[] name,
        byte[] podField,
        byte[] record,
        List<Map.Entry<Integer, byte[]>> streams,
        Map<String, byte[]> activity) {
      RedisFuture<byte[]> inferred = redis.get(keys.inferred(name[0], name[1]));
      List<CompletableFuture<Rank>> ranks = new ArrayList<>();
      streams.sort(Map.Entry.comparingByKey());
      for (Map.Entry<Integer, byte[]> s : streams) {
        ranks.add(rank(name, podField, record, s.getKey(), utf8(s.getValue()), activity));
      }
      Long deadline = PodRecord.deadlineOrNull(record);
      List<Rank> done = new ArrayList<>();
      ranks.forEach(r -> done.add(Await.of(r)));
      byte[] capacity = await(inferred);
      return new Pod(
          name[0],
          name[1],
          g,
          deadline,
          deadline != null && deadline >= now,
          capacity == null ? null : (int) StoredValues.decimal(capacity),
          done);
    }

    private CompletableFuture<Rank> rank(
        String[] name,
        byte[] podField,
        byte[] record,
        int rank,
        String stream,
        Map<String, byte[]> activity) {
      byte[] streamField =
          ByteBuffer.allocate(podField.length + 4).put(podField).putInt(rank).array();
      StreamRecord streamRecord = StreamRecord.decode(stream);
      int slot = streamRecord.slot();
      Long watermark = streamRecord.watermark();
      boolean stagedEmpty = streamRecord.stagedEmpty();
      StreamRecord.InProgress part = streamRecord.inProgress();
      String inProgress = part == null ? null : part.seq() + ":" + part.blocksDone();
      byte[] leaseKey = keys.lease(new io.kvindex.index.StreamId(name[0], name[1], rank));
      CompletableFuture<byte[]> lease = redis.get(leaseKey).toCompletableFuture();
      CompletableFuture<Long> ttl = redis.pttl(leaseKey).toCompletableFuture();
      CompletableFuture<Blocks> blocks = blocks(slot);
      Long applied = number(activity.get(latin1(KeySchema.appliedField(streamField))));
      Purge purge = purge(activity.get(latin1(KeySchema.purgedField(streamField))));
      return lease
          .thenCombine(ttl, (l, t) -> new Object[] {l, t})
          .thenCombine(
              blocks,
              (lt, b) -> {
                String owner = lt[0] == null ? null : utf8((byte[]) lt[0]);
                owner = owner == null ? null : owner.substring(owner.indexOf(':') + 1);
                long remaining = (Long) lt[1];
                return new Rank(
                    rank,
                    slot,
                    stagedEmpty || (slot != 0 && !PodRecord.lists(record, slot, rank)),
                    watermark,
                    inProgress,
                    owner,
                    owner == null || remaining < 0 ? null : remaining,
                    b,
                    applied,
                    purge);
              });
    }

    private CompletableFuture<Blocks> blocks(int slot) {
      if (slot == 0) {
        return CompletableFuture.completedFuture(Blocks.NONE);
      }
      byte[][] fields = new byte[TIERS.length][];
      for (int i = 0; i < TIERS.length; i++) {
        fields[i] = (slot + ":" + TIERS[i]).getBytes(StandardCharsets.US_ASCII);
      }
      return redis
          .hmget(keys.counts(g), fields)
          .toCompletableFuture()
          .thenApply(
              v ->
                  new Blocks(
                      decimal(value(v.get(0))),
                      decimal(value(v.get(1))),
                      decimal(value(v.get(2))),
                      decimal(value(v.get(3))),
                      decimal(value(v.get(4)))));
    }

    private Purge purge(byte[] value) {
      if (value == null) {
        return null;
      }
      String[] parts = ascii(value).split("\\|");
      int slot = Integer.parseInt(parts[1]);
      return new Purge(Long.parseLong(parts[0]), slot, slot != 0 && dead.containsKey(slot));
    }

    private Map<ByteBuffer, byte[]> scan(byte[] key, int limit) {
      Map<ByteBuffer, byte[]> out = new LinkedHashMap<>();
      ScanCursor cursor = ScanCursor.INITIAL;
      do {
        MapScanCursor<byte[], byte[]> page =
            await(redis.hscan(key, cursor, ScanArgs.Builder.limit(SCAN_COUNT)));
        page.getMap().forEach((k, v) -> out.put(ByteBuffer.wrap(k), v));
        cursor = page;
      } while (!cursor.isFinished() && out.size() < limit);
      return out;
    }
  }

  /** What writers and readers noted about the models they key. */
  private static final class Notes {
    final Map<String, Set<String>> writerModes = new TreeMap<>();
    final Map<String, Set<String>> readerKeys = new TreeMap<>();
    final Set<String> models = new TreeSet<>();
    final Set<Integer> segmentSlots = new TreeSet<>();
    final Map<String, KeyCheckNote> keyChecks = new TreeMap<>();

    void keyChecks(Map<byte[], byte[]> notes) {
      notes.forEach(
          (field, value) -> {
            try {
              String model = new String(field, StandardCharsets.UTF_8);
              keyChecks.put(model, KeyCheckNote.decode(value));
              models.add(model);
            } catch (IllegalArgumentException e) {
              // a note of another release: not shown
            }
          });
    }

    void writers(Map<String, byte[]> meta) {
      for (String field : meta.keySet()) {
        if (field.startsWith(KeySchema.NOTE + "mode:")) {
          String rest = field.substring((KeySchema.NOTE + "mode:").length());
          int colon = rest.indexOf(':');
          String model = lengthPrefixed(latin1Bytes(rest.substring(colon + 1)), 0);
          writerModes.computeIfAbsent(model, m -> new TreeSet<>()).add(rest.substring(0, colon));
          models.add(model);
        } else if (field.startsWith(KeySchema.NOTE + "segment-slots:")) {
          segmentSlots.add(
              Integer.valueOf(field.substring((KeySchema.NOTE + "segment-slots:").length())));
        }
      }
    }

    void readers(Map<byte[], byte[]> notes) {
      byte[] prefix = (KeySchema.NOTE + "keys:").getBytes(StandardCharsets.US_ASCII);
      for (byte[] field : notes.keySet()) {
        if (field.length < prefix.length || !latin1(field).startsWith(latin1(prefix))) {
          continue;
        }
        String keys = lengthPrefixed(field, prefix.length);
        int at = prefix.length + 4 + keys.getBytes(StandardCharsets.UTF_8).length;
        String model = lengthPrefixed(field, at);
        readerKeys.computeIfAbsent(model, m -> new TreeSet<>()).add(keys);
        if (!model.isEmpty()) {
          models.add(model);
        }
      }
    }

    List<ModelKeys> models(String only) {
      List<ModelKeys> out = new ArrayList<>();
      Set<String> defaults = readerKeys.getOrDefault("", Set.of());
      for (String model : models) {
        if (only != null && !only.equals(model)) {
          continue;
        }
        Set<String> modes = writerModes.getOrDefault(model, Set.of());
        Set<String> keys = new TreeSet<>(readerKeys.getOrDefault(model, Set.of()));
        if (keys.isEmpty()) {
          defaults.forEach(d -> keys.add(d + " (default keys)"));
        }
        out.add(
            new ModelKeys(
                model,
                List.copyOf(modes),
                List.copyOf(keys),
                problem(modes, keys),
                keyChecks.get(model)));
      }
      return out;
    }

    private static String problem(Set<String> modes, Set<String> keys) {
      if (modes.size() > 1) {
        return "writers apply it in both key modes: give every ingester the same"
            + " --key-mode for it";
      }
      for (String k : keys) {
        String mode = k.substring(0, k.indexOf(':'));
        if (!modes.isEmpty() && !modes.contains(mode)) {
          return "a router keys it as "
              + mode
              + " but writers apply it as "
              + modes.iterator().next()
              + ": no lookup can match; give the router --model with the writers' mode";
        }
      }
      if (keys.stream().map(k -> k.substring(0, k.indexOf(':'))).distinct().count() > 1) {
        return "routers key it in different modes: give every router the same --model";
      }
      return null;
    }
  }

  /** {@code u32 length | UTF-8} at {@code at}. */
  private static String lengthPrefixed(byte[] bytes, int at) {
    int n = ByteBuffer.wrap(bytes, at, 4).getInt();
    return new String(bytes, at + 4, n, StandardCharsets.UTF_8);
  }

  /** A pod field's model and pod. */
  private static String[] names(byte[] podField) {
    String model = lengthPrefixed(podField, 0);
    int at = 4 + model.getBytes(StandardCharsets.UTF_8).length;
    return new String[] {model, lengthPrefixed(podField, at)};
  }

  /** A hash's fields keyed by their bytes read as ISO-8859-1 (one char per byte, lossless). */
  private static Map<String, byte[]> text(Map<byte[], byte[]> hash) {
    Map<String, byte[]> out = new HashMap<>();
    hash.forEach((k, v) -> out.put(latin1(k), v));
    return out;
  }

  private static String latin1(byte[] bytes) {
    return new String(bytes, StandardCharsets.ISO_8859_1);
  }

  private static byte[] latin1Bytes(String text) {
    return text.getBytes(StandardCharsets.ISO_8859_1);
  }

  private static String ascii(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.US_ASCII);
  }

  private static String utf8(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static long decimal(byte[] value) {
    return value == null ? 0 : Long.parseLong(ascii(value));
  }

  private static Long number(byte[] value) {
    return value == null ? null : Long.valueOf(ascii(value));
  }

  private static byte[] value(KeyValue<byte[], byte[]> kv) {
    return kv.hasValue() ? kv.getValue() : null;
  }

  private static byte[] bytes(ByteBuffer buffer) {
    byte[] out = new byte[buffer.remaining()];
    buffer.duplicate().get(out);
    return out;
  }

  private static <T> T await(RedisFuture<T> future) {
    return Await.of(future.toCompletableFuture());
  }
}
