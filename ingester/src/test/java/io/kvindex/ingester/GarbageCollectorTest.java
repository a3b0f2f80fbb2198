package io.kvindex.ingester;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.GcResult;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.index.redis.KeySchema;
import io.kvindex.ingester.keycheck.KeyChecks;
import io.kvindex.redis.RedisConnector;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * GC rounds against streams that purge faster than a pass over a big blocks hash ends: the round
 * takes more steps as holder slots run low, so slots come back before they run out.
 */
@UsesRedis
class GarbageCollectorTest {
  private static final String MODEL = "m";
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  @Test
  void stepsFor_growInInverseProportionToTheSlotsLeft() {
    assertThat(GarbageCollector.stepsFor(100, 4095)).isEqualTo(100);
    assertThat(GarbageCollector.stepsFor(100, 1024)).isEqualTo(100);
    assertThat(GarbageCollector.stepsFor(100, 1023)).isEqualTo(200);
    assertThat(GarbageCollector.stepsFor(100, 512)).isEqualTo(200);
    assertThat(GarbageCollector.stepsFor(100, 256)).isEqualTo(400);
    assertThat(GarbageCollector.stepsFor(100, 100)).isEqualTo(1100);
    assertThat(GarbageCollector.stepsFor(100, 64)).isEqualTo(1600);
    assertThat(GarbageCollector.stepsFor(100, 0)).isEqualTo(1600);
    assertThat(GarbageCollector.stepsFor(100, -1)).as("unknown").isEqualTo(100);
    assertThat(GarbageCollector.stepsFor(Integer.MAX_VALUE, 1)).isEqualTo(Integer.MAX_VALUE);
  }

  /**
   * 60 streams purge and store again every round over a group of about 4 000 fields: with the
   * rounds' steps fixed at 5, a slot comes back about 100 rounds after its death and the 4 095 run
   * out near round 68 (a batch is then refused); with steps that grow as slots run low, they never
   * do. Rounds are called one after another, so the test does not depend on time.
   */
  @Test
  void round_streamsPurgingFasterThanPassesEnd_slotsNeverRunOut(RedisStandalone redis) {
    RedisConnector connector = Connectors.connect(redis, meters);
    opened.add(connector);
    PrefixIndex index = PrefixIndex.builder().indexName("gc-churn").redis(connector).build();
    opened.add(index);
    IngesterMetrics metrics = new IngesterMetrics(meters);
    IngesterConfig config = IngesterConfig.builder().gcMaxSteps(5).httpPort(-1).build();
    GarbageCollector gc =
        new GarbageCollector(
            new Shared(
                config,
                null,
                index,
                metrics,
                new Gate(),
                InstantSource.system(),
                System::nanoTime,
                new KeyChecks(
                    Duration.ZERO, index, metrics, System::nanoTime, InstantSource.system())));

    StreamId big = StreamId.of(MODEL, "big");
    Lease bigLease = lease(index, big);
    for (int i = 0; i < 40; i++) {
      long first = 1 + 100L * i;
      applied(index, big, i, bigLease, stored(hashes(first, 100), i == 0 ? null : first - 1, null));
    }

    List<StreamId> churn = new ArrayList<>();
    List<Lease> leases = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      StreamId s = StreamId.of(MODEL, "churn-" + i);
      churn.add(s);
      leases.add(lease(index, s));
    }
    int fewest = GcResult.HOLDER_SLOTS;
    for (int round = 0; round < 120; round++) {
      for (int i = 0; i < churn.size(); i++) {
        StreamId s = churn.get(i);
        // A new holder slot each round (the batch would be refused if none were left).
        applied(index, s, round, leases.get(i), stored(hashes(1_000_000L + i, 1), null, null));
        assertThat(index.purge(s, leases.get(i), PurgeMode.KEEP_WATERMARK))
            .isEqualTo(PurgeStatus.PURGED);
      }
      gc.round();
      fewest = Math.min(fewest, (int) available());
    }
    assertThat(fewest).as("fewest holder slots available after a round").isPositive();
    assertThat(meters.get("kvindex.ingester.slots.dead").tag("group", "0").gauge().value())
        .isPositive();
    assertThat(entriesOfFreeSlots(redis)).as("entries naming a slot on the free list").isEmpty();
  }

  /** Block fields' entries that name a slot GC has freed: a reused slot would inherit them. */
  private List<String> entriesOfFreeSlots(RedisStandalone redis) {
    RedisClient client = RedisClient.create(redis.uri());
    opened.add(client::shutdown);
    StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
    opened.add(c);
    byte[] blocks = new KeySchema("gc-churn", 1).blocksKey(0);
    String blocksName = new String(blocks, StandardCharsets.US_ASCII);
    byte[] freeList =
        (blocksName.substring(0, blocksName.lastIndexOf(':')) + ":free")
            .getBytes(StandardCharsets.US_ASCII);
    Set<Integer> free = new HashSet<>();
    for (byte[] s : c.sync().lrange(freeList, 0, -1)) {
      free.add(Integer.parseInt(new String(s, StandardCharsets.US_ASCII)));
    }
    assertThat(free).as("slots freed").isNotEmpty();
    List<String> found = new ArrayList<>();
    c.sync()
        .hgetall(blocks)
        .forEach(
            (field, v) -> {
              if (field.length != 18) {
                return; // not a block field (scope 8, cache group 2, key 8)
              }
              for (int k = v.length % 2 == 1 ? 11 : 0; // past a locator
                  k + 1 < v.length;
                  k += 2) {
                int slot = ((v[k] & 0xff) << 4) | ((v[k + 1] & 0xf0) >>> 4);
                if (free.contains(slot)) {
                  found.add(HexFormat.of().formatHex(field) + " slot " + slot);
                }
              }
            });
    return found;
  }

  private double available() {
    return meters.get("kvindex.ingester.slots.available").tag("group", "0").gauge().value();
  }

  private static void applied(
      PrefixIndex index, StreamId s, long seq, Lease lease, io.kvindex.event.KvEvent event) {
    assertThat(index.apply(s, KeyMode.ENGINE, seq, lease, batch(event)).status())
        .as("%s seq %d", s.pod(), seq)
        .isEqualTo(ApplyStatus.APPLIED);
  }

  private static Lease lease(PrefixIndex index, StreamId s) {
    return index.acquireLease(s, "gc-test", Duration.ofMinutes(10)).orElseThrow();
  }
}
