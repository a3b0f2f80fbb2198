package io.kvindex.inspect;

import static io.kvindex.inspect.StoredText.ascii;
import static io.kvindex.inspect.StoredText.bytes;
import static io.kvindex.inspect.StoredText.decimal;
import static io.kvindex.inspect.StoredText.latin1;
import static io.kvindex.inspect.StoredText.names;
import static io.kvindex.inspect.StoredText.number;
import static io.kvindex.inspect.StoredText.text;
import static io.kvindex.inspect.StoredText.utf8;
import static io.kvindex.inspect.StoredText.value;

import io.kvindex.common.Await;
import io.kvindex.index.redis.HashFields;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.index.redis.PodRecord;
import io.kvindex.index.redis.SlotCounts;
import io.kvindex.index.redis.StoredValues;
import io.kvindex.index.redis.StreamRecord;
import io.kvindex.inspect.IndexReport.Blocks;
import io.kvindex.inspect.IndexReport.DeadSlot;
import io.kvindex.inspect.IndexReport.Group;
import io.kvindex.inspect.IndexReport.Pod;
import io.kvindex.inspect.IndexReport.Purge;
import io.kvindex.inspect.IndexReport.Rank;
import io.lettuce.core.KeyValue;
import io.lettuce.core.MapScanCursor;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * One group's reads for the {@link RedisInspector}: its small keys (meta, the free list, the dead
 * slots, the counts, the activity), its stream and pod records, per stream its lease and its slot's
 * counts, and a sampled {@code MEMORY USAGE} of each key; never a scan of the blocks hash. Not
 * thread-safe: one read uses it.
 */
final class GroupReader {
  private static final int SCAN_COUNT = 512;

  private final RedisClusterAsyncCommands<byte[], byte[]> redis;
  private final KeySchema keys;
  private final int g;
  private final long now;
  private final Map<String, byte[]> meta;
  private final Map<Integer, Long> dead = new TreeMap<>();

  GroupReader(RedisClusterAsyncCommands<byte[], byte[]> redis, KeySchema keys, int g, long now) {
    this.redis = redis;
    this.keys = keys;
    this.g = g;
    this.now = now;
    this.meta = text(await(redis.hgetall(keys.meta(g))));
    text(await(redis.hgetall(keys.dead(g))))
        .forEach((slot, pass) -> dead.put(Integer.parseInt(slot), decimal(pass)));
  }

  /** The group's meta hash, its fields as text. */
  Map<String, byte[]> meta() {
    return meta;
  }

  /** The group's small keys and their memory. */
  Group report() {
    RedisFuture<Long> free = redis.llen(keys.free(g));
    RedisFuture<List<KeyValue<byte[], byte[]>>> named =
        redis.hmget(keys.blocksKey(g), KeySchema.UNLOCATED_FIELD);
    RedisFuture<byte[]> overflowed =
        redis.hget(keys.counts(g), SlotCounts.OVERFLOWED_SEGMENTS_FIELD);
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
    Map<ByteBuffer, byte[]> records = scan(keys.pods(g), RedisInspector.MAX_STREAMS);
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
    Long applied = number(activity.get(latin1(HashFields.appliedField(streamField))));
    Purge purge = purge(activity.get(latin1(HashFields.purgedField(streamField))));
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
    return redis
        .hmget(keys.counts(g), SlotCounts.fields(slot))
        .toCompletableFuture()
        .thenApply(
            v -> {
              SlotCounts c = SlotCounts.decode(v.stream().map(StoredText::value).toList());
              return new Blocks(c.blocks(), c.gpu(), c.cpu(), c.storage(), c.other());
            });
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

  static <T> T await(RedisFuture<T> future) {
    return Await.of(future.toCompletableFuture());
  }
}
