package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.InMemoryPrefixIndex;
import io.kvindex.index.IndexFixtures;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.RandomFleet;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.MapScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The per-slot block counts (the counts hash) equal a recount of every block field, whatever
 * happened: random streams applied in chunks, duplicates, gaps, clears, purges, and garbage
 * collection steps of random sizes between them.
 */
@UsesRedis
class BlockCountsTest {
  private static final String INDEX = "counts";
  private static final int GROUPS = 3;
  private static final String[] TIERS = {"gpu", "cpu", "storage", "other"};

  private final KeySchema keys = new KeySchema(INDEX, GROUPS);
  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> connection;
  private RedisCommands<byte[], byte[]> redis;
  private RedisConnector connector;
  private PrefixIndex index;

  @BeforeEach
  void open(RedisStandalone server) {
    client = RedisClient.create(server.uri());
    connection = client.connect(ByteArrayCodec.INSTANCE);
    redis = connection.sync();
    connector = Connectors.connect(server);
    // The smallest chunk: the fleet's batches of up to ~36 blocks apply in several calls.
    index =
        PrefixIndex.builder()
            .indexName(INDEX)
            .groups(GROUPS)
            .applyChunkBlocks(16)
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
  }

  @AfterEach
  void close() {
    index.close();
    connector.close();
    connection.close();
    client.shutdown();
  }

  @Test
  void counts_randomStreamsChunksPurgesAndGcSteps_equalRecount() {
    RandomFleet fleet = new RandomFleet(20260417L);
    PrefixIndex model = InMemoryPrefixIndex.of(PrefixIndex.builder().groups(GROUPS));
    Random random = new Random(17);
    int checked = 0;
    for (int round = 0; round < 25; round++) {
      fleet.run(model, index, 40);
      for (int step = random.nextInt(6); step > 0; step--) {
        index.collectGarbage(random.nextInt(GROUPS), 1 + random.nextInt(40));
      }
      checked += assertCountsEqualRecount();
    }
    IndexFixtures.collectAllGarbage(index);
    assertCountsEqualRecount();
    assertThat(checked).as("slots with blocks checked (the test is not vacuous)").isGreaterThan(50);
  }

  /**
   * Chunks written again (their replies lost, the stream record naming them next once more) store
   * blocks the slot already holds and remove them again: nothing is counted twice.
   */
  @Test
  void counts_chunkWrittenAgain_countedOnce() {
    StreamId s = StreamId.of("m", "a");
    Lease lease = index.acquireLease(s, "owner", Duration.ofMinutes(1)).orElseThrow();
    int g = keys.groupOf("m", "a");
    assertThat(
            apply(
                s,
                lease,
                0,
                batch(stored(hashes(1, 48), null, null), removed(hashes(47, 2), null))))
        .isEqualTo(ApplyStatus.APPLIED);
    byte[] field = HashFields.streamField(s);
    String record = new String(redis.hget(keys.streams(g), field), StandardCharsets.UTF_8);
    String slot = record.substring(0, record.indexOf('|'));
    redis.hset(keys.streams(g), field, (slot + "||0:1").getBytes(StandardCharsets.UTF_8));

    assertThat(
            apply(
                s,
                lease,
                0,
                batch(stored(hashes(1, 48), null, null), removed(hashes(47, 2), null))))
        .isEqualTo(ApplyStatus.APPLIED);

    assertThat(counts(g)).containsEntry(slot + ":blocks", 46L).containsEntry(slot + ":gpu", 46L);
    assertCountsEqualRecount();
  }

  /**
   * A rebuild's staged batches (applied in chunks, their slot not in the pod record) count their
   * entries as any apply does; publishing lists the slot and changes no count; a purge of a staged
   * slot and the GC after it take them away again.
   */
  @Test
  void counts_stagedChunksPublishAndPurge_equalRecount() {
    StreamId s = StreamId.of("m", "staged");
    StreamId t = StreamId.of("m", "purged-while-staged");
    Lease ls = index.acquireLease(s, "owner", Duration.ofMinutes(1)).orElseThrow();
    Lease lt = index.acquireLease(t, "owner", Duration.ofMinutes(1)).orElseThrow();
    index.apply(s, Events.mode(s), 0, ls, batch(stored(hashes(1, 40), null, null)), true);
    index.apply(
        s,
        Events.mode(s),
        1,
        ls,
        batch(removed(hashes(30, 5), null), stored(hashes(1, 3), null, "CPU")),
        true);
    index.apply(t, Events.mode(t), 0, lt, batch(stored(hashes(1, 20), null, null)), true);
    assertThat(index.staged(s)).isTrue();
    int g = keys.groupOf("m", "staged");
    String slot = slotOf(s);
    assertThat(counts(g)).containsEntry(slot + ":blocks", 35L).containsEntry(slot + ":cpu", 3L);
    assertCountsEqualRecount();

    index.publish(s, ls);
    assertThat(index.staged(s)).isFalse();
    assertThat(counts(g)).containsEntry(slot + ":blocks", 35L);
    index.purge(t, lt, io.kvindex.index.PurgeMode.KEEP_WATERMARK);
    assertCountsEqualRecount();

    IndexFixtures.collectAllGarbage(index);
    assertCountsEqualRecount();
  }

  /**
   * With more dead slots than the scripts read whole (128), GC asks the dead hash about the slots
   * its fields name and an apply about those its segment changes name: 140 streams of one group
   * share a 300-block chain (segments and a span) and each holds 4 blocks of its own, one tier
   * each; 135 are purged, a survivor stores more of the chain, and GC runs to the end. The counts
   * equal a recount after each step, and no block, segment or span field names a dead slot.
   */
  @Test
  void counts_moreDeadSlotsThanReadWhole_equalRecountAndNoDeadEntryLeft() {
    String[] media = {null, "CPU", "DISK", "LOCAL_NVME"};
    java.util.List<StreamId> streams = new java.util.ArrayList<>();
    java.util.List<Lease> leases = new java.util.ArrayList<>();
    for (int i = 0; streams.size() < 140; i++) {
      if (keys.groupOf("m", "p" + i) == 0) {
        StreamId s = StreamId.of("m", "p" + i);
        streams.add(s);
        leases.add(index.acquireLease(s, "owner", Duration.ofMinutes(1)).orElseThrow());
      }
    }
    for (int i = 0; i < streams.size(); i++) {
      assertThat(
              apply(
                  streams.get(i),
                  leases.get(i),
                  0,
                  batch(
                      stored(hashes(1, 300), null, media[i % 4]),
                      stored(hashes(10_000 + 10L * i, 4), 300L, media[(i + 1) % 4]))))
          .isEqualTo(ApplyStatus.APPLIED);
    }
    for (int i = 5; i < streams.size(); i++) {
      index.purge(streams.get(i), leases.get(i), io.kvindex.index.PurgeMode.KEEP_WATERMARK);
    }
    assertThat(redis.hlen(keys.dead(0))).isGreaterThan(128L);
    assertCountsEqualRecount();
    assertThat(
            apply(
                streams.get(0),
                leases.get(0),
                1,
                batch(stored(hashes(301, 20), 300L, "CPU"), removed(hashes(1, 2), null))))
        .isEqualTo(ApplyStatus.APPLIED);
    assertCountsEqualRecount();
    for (int step = 0; step < 3; step++) {
      index.collectGarbage(0, 7);
      assertCountsEqualRecount();
    }
    IndexFixtures.collectAllGarbage(index);
    assertCountsEqualRecount();
    java.util.Set<Integer> live = new java.util.HashSet<>();
    for (int i = 0; i < 5; i++) {
      live.add(Integer.parseInt(slotOf(streams.get(i))));
    }
    java.util.Set<Integer> named = new java.util.TreeSet<>();
    int fields = 0;
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      MapScanCursor<byte[], byte[]> page = redis.hscan(keys.blocks(0), cursor);
      for (Map.Entry<byte[], byte[]> e : page.getMap().entrySet()) {
        int length = e.getKey().length;
        if (length == KeySchema.BLOCK_FIELD_BYTES) {
          BlockValue.decode(e.getValue()).entries().forEach(x -> named.add(x.slot()));
          fields++;
        } else if (length == KeySchema.SEGMENT_FIELD_BYTES) {
          for (SegmentValue.Slot slot : SegmentValue.decode(e.getValue()).slots()) {
            if (slot.entries() != null) {
              slot.entries().forEach(x -> named.add(x.slot()));
            }
          }
          fields++;
        }
      }
      cursor = page;
    } while (!cursor.isFinished());
    assertThat(fields).as("fields left (the test is not vacuous)").isGreaterThan(300);
    assertThat(named).isEqualTo(new java.util.TreeSet<>(live));
  }

  private String slotOf(StreamId s) {
    byte[] record =
        redis.hget(keys.streams(keys.groupOf(s.model(), s.pod())), HashFields.streamField(s));
    String text = new String(record, StandardCharsets.UTF_8);
    return text.substring(0, text.indexOf('|'));
  }

  private ApplyStatus apply(StreamId s, Lease lease, long seq, io.kvindex.event.KvEventBatch b) {
    return index.apply(s, Events.mode(s), seq, lease, b).status();
  }

  /** Every group's counts equal its recount; returns the slots with blocks compared. */
  private int assertCountsEqualRecount() {
    int slots = 0;
    for (int g = 0; g < GROUPS; g++) {
      Map<String, Long> recount = recount(g);
      assertThat(counts(g)).as("counts of group %d", g).isEqualTo(recount);
      slots += (int) recount.keySet().stream().filter(k -> k.endsWith(":blocks")).count();
    }
    return slots;
  }

  /** The counts hash's per-slot fields, zeros left out. */
  private Map<String, Long> counts(int g) {
    Map<String, Long> out = new TreeMap<>();
    redis
        .hgetall(keys.counts(g))
        .forEach(
            (field, value) -> {
              String name = new String(field, StandardCharsets.US_ASCII);
              long n = Long.parseLong(new String(value, StandardCharsets.US_ASCII));
              if (name.matches("\\d+:[a-z]+") && n != 0) {
                out.put(name, n);
              }
            });
    return out;
  }

  /** Per slot, the block fields holding an entry of it, in all and per tier: a full scan. */
  private Map<String, Long> recount(int g) {
    Map<String, Long> out = new TreeMap<>();
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      MapScanCursor<byte[], byte[]> page = redis.hscan(keys.blocks(g), cursor);
      for (Map.Entry<byte[], byte[]> e : page.getMap().entrySet()) {
        if (e.getKey().length == KeySchema.BLOCK_FIELD_BYTES) {
          count(e.getValue(), out);
        }
      }
      cursor = page;
    } while (!cursor.isFinished());
    return out;
  }

  private static void count(byte[] value, Map<String, Long> out) {
    for (BlockValue.Entry entry : BlockValue.decode(value).entries()) {
      int slot = entry.slot();
      int tiers = entry.tiers();
      out.merge(slot + ":blocks", 1L, Long::sum);
      for (int t = 0; t < TIERS.length; t++) {
        if ((tiers & (1 << t)) != 0) {
          out.merge(slot + ":" + TIERS[t], 1L, Long::sum);
        }
      }
    }
  }
}
