package io.kvindex.inspect;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.IndexFixtures;
import io.kvindex.index.Lease;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.StreamId;
import io.kvindex.inspect.IndexReport.Pod;
import io.kvindex.inspect.IndexReport.Rank;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The inspector against a real index that real writes built: what it reports per pod, rank, group
 * and replica, that it finds a key-mode disagreement, and that it writes nothing.
 */
@UsesRedis
class RedisInspectorTest {
  private static final String MODEL = "m";
  private RedisConnector connector;
  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> raw;
  private final List<PrefixIndex> opened = new ArrayList<>();

  @BeforeEach
  void connect(RedisStandalone server) {
    connector = Connectors.connect(server);
    client = RedisClient.create(server.uri());
    raw = client.connect(ByteArrayCodec.INSTANCE);
  }

  @AfterEach
  void disconnect() {
    opened.forEach(PrefixIndex::close);
    connector.close();
    raw.close();
    client.shutdown();
  }

  private PrefixIndex open(int groups) {
    PrefixIndex index =
        PrefixIndex.builder()
            .indexName("t")
            .groups(groups)
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .build();
    opened.add(index);
    return index;
  }

  private static Lease lease(PrefixIndex index, StreamId s, String owner) {
    return index.acquireLease(s, owner, Duration.ofMinutes(5)).orElseThrow();
  }

  private IndexReport inspect(String model, String pod) {
    return RedisInspector.of(connector, "t").read(model, pod);
  }

  /**
   * A read that meets Redis restarting (a failover, a crash) waits for it, as every other call of
   * the index does, rather than failing on the first command the disconnected client refuses.
   */
  @Test
  void read_redisRestarting_waitsForItThenReads(
      @Fresh(settings = {"appendonly yes", "appendfsync always"}) RedisStandalone server)
      throws InterruptedException {
    try (RedisConnector own = Connectors.connect(server);
        PrefixIndex index = PrefixIndex.builder().indexName("t").redis(own).build()) {
      StreamId s = StreamId.of(MODEL, "p");
      index.apply(
          s,
          Events.mode(s),
          0,
          lease(index, s, "ingester-1"),
          batch(stored(hashes(1, 3), null, null)));
      server.node().kill();
      Thread restart =
          new Thread(
              () -> {
                LockSupport.parkNanos(Duration.ofMillis(700).toNanos()); // down for a while
                server.node().restart();
              });
      restart.start();
      IndexReport report = RedisInspector.of(own, "t").read(null, null);
      restart.join();
      assertThat(report.pods()).extracting(Pod::pod).containsExactly("p");
    }
  }

  @Test
  void read_noIndex_saysSo() {
    IndexReport report = inspect(null, null);

    assertThat(report.exists()).isFalse();
    assertThat(report.pods()).isEmpty();
  }

  @Test
  void read_streamsOfAPod_reportsSlotWatermarkLeaseBlocksAndActivity() {
    PrefixIndex index = open(1);
    StreamId r0 = new StreamId(MODEL, "pod-a", 0);
    StreamId r1 = new StreamId(MODEL, "pod-a", 1);
    Lease l0 = lease(index, r0, "replica-1");
    index.apply(r0, Events.mode(r0), 0, l0, batch(stored(hashes(1, 5), null, null)));
    index.apply(r0, Events.mode(r0), 1, l0, batch(stored(hashes(100, 3), null, "CPU")));
    index.apply(r0, Events.mode(r0), 2, l0, batch(removed(hashes(1, 1), null)));
    Lease l1 = lease(index, r1, "replica-1");
    index.apply(r1, Events.mode(r1), 0, l1, batch(stored(hashes(1, 2), null, null)));
    index.registerReplica("replica-1", Duration.ofMinutes(1));

    IndexReport report = inspect(null, null);

    assertThat(report.groups()).isEqualTo(1);
    assertThat(report.segmentSlots()).containsExactly(256);
    Pod pod = report.pods().get(0);
    assertThat(pod.pod()).isEqualTo("pod-a");
    assertThat(pod.live()).isTrue();
    assertThat(pod.livenessDeadlineMs()).isGreaterThan(report.nowMs());
    Rank rank0 = pod.ranks().get(0);
    assertThat(rank0.rank()).isZero();
    assertThat(rank0.slot()).isPositive();
    assertThat(rank0.staged()).isFalse();
    assertThat(rank0.watermark()).isEqualTo(2);
    assertThat(rank0.leaseOwner()).isEqualTo("replica-1");
    assertThat(rank0.leaseTtlMs()).isBetween(1L, Duration.ofMinutes(5).toMillis());
    assertThat(rank0.blocks()).isEqualTo(new IndexReport.Blocks(7, 4, 3, 0, 0));
    assertThat(rank0.lastApplyMs()).isBetween(report.nowMs() - 60_000, report.nowMs());
    assertThat(rank0.lastPurge()).isNull();
    assertThat(pod.ranks().get(1).blocks().all()).isEqualTo(2);
    assertThat(report.replicas())
        .singleElement()
        .satisfies(r -> assertThat(r.live()).isTrue())
        .satisfies(r -> assertThat(r.leases()).isEqualTo(2));
    assertThat(report.models())
        .singleElement()
        .satisfies(m -> assertThat(m.writerModes()).containsExactly("engine"));
  }

  @Test
  void read_afterPurge_showsTheCleanupUntilGcFreesTheSlot() {
    PrefixIndex index = open(1);
    StreamId s = StreamId.of(MODEL, "pod-a");
    Lease lease = lease(index, s, "replica-1");
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1, 5), null, null)));
    int slot = inspect(null, null).pods().get(0).ranks().get(0).slot();

    index.purge(s, lease, PurgeMode.KEEP_WATERMARK);
    IndexReport purged = inspect(MODEL, "pod-a");

    Rank rank = purged.pods().get(0).ranks().get(0);
    assertThat(rank.slot()).isZero();
    assertThat(rank.watermark()).isZero();
    assertThat(rank.lastPurge().slotRetired()).isEqualTo(slot);
    assertThat(rank.lastPurge().cleanupPending()).isTrue();
    assertThat(purged.groupReports().get(0).deadSlots())
        .extracting(IndexReport.DeadSlot::slot)
        .containsExactly(slot);

    IndexFixtures.collectAllGarbage(index);
    IndexReport collected = inspect(MODEL, "pod-a");

    assertThat(collected.pods().get(0).ranks().get(0).lastPurge().cleanupPending()).isFalse();
    assertThat(collected.groupReports().get(0).deadSlots()).isEmpty();
    assertThat(collected.groupReports().get(0).freeSlots()).isEqualTo(1);
  }

  @Test
  void read_rebuildReplaying_showsTheStreamStagedUntilPublished() {
    PrefixIndex index = open(1);
    StreamId s = StreamId.of(MODEL, "pod-a");
    Lease lease = lease(index, s, "r");
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1, 4), null, null)), true);

    Rank staged = inspect(null, null).pods().get(0).ranks().get(0);
    assertThat(staged.staged()).isTrue();
    assertThat(staged.blocks().all()).isEqualTo(4);

    index.publish(s, lease);
    assertThat(inspect(null, null).pods().get(0).ranks().get(0).staged()).isFalse();
  }

  @Test
  void read_routerKeysAnotherMode_reportsTheProblem() {
    PrefixIndex index = open(1);
    StreamId s = StreamId.of(MODEL, "pod-a");
    index.apply(
        s, Events.mode(s), 0, lease(index, s, "r"), batch(stored(hashes(1, 2), null, null)));
    index.noteReaderKeysAsync(MODEL, "token:16").join();
    index.noteReaderKeysAsync("other", "engine:sha256_cbor:42:16").join();

    IndexReport report = inspect(null, null);

    assertThat(report.models())
        .filteredOn(m -> m.model().equals(MODEL))
        .singleElement()
        .satisfies(m -> assertThat(m.readerKeys()).containsExactly("token:16"))
        .satisfies(m -> assertThat(m.problem()).contains("keys it as token"));
    assertThat(report.models())
        .filteredOn(m -> m.model().equals("other"))
        .singleElement()
        .satisfies(m -> assertThat(m.problem()).isNull());
  }

  @Test
  void read_filteredByPod_readsOnlyItsGroup() {
    PrefixIndex index = open(4);
    for (String pod : List.of("p1", "p2", "p3", "p4", "p5")) {
      StreamId s = StreamId.of(MODEL, pod);
      index.apply(
          s, Events.mode(s), 0, lease(index, s, "r"), batch(stored(hashes(1, 2), null, null)));
    }

    IndexReport report = inspect(MODEL, "p3");

    assertThat(report.pods()).extracting(Pod::pod).containsExactly("p3");
    assertThat(report.groupReports())
        .singleElement()
        .satisfies(g -> assertThat(g.group()).isEqualTo(index.groupOf(MODEL, "p3")));
    assertThat(inspect(MODEL, null).pods()).hasSize(5);
  }

  @Test
  void read_writesNothing() {
    PrefixIndex index = open(2);
    StreamId s = StreamId.of(MODEL, "pod-a");
    index.apply(
        s, Events.mode(s), 0, lease(index, s, "r"), batch(stored(hashes(1, 2), null, null)));
    long dirtyBefore = dirty();

    inspect(null, null);

    assertThat(dirty()).isEqualTo(dirtyBefore);
  }

  /** Changes to the dataset since the last save: any write moves it. */
  private long dirty() {
    String info = raw.sync().info("persistence");
    return Long.parseLong(info.replaceAll("(?s).*rdb_changes_since_last_save:(\\d+).*", "$1"));
  }

  @Test
  void evictionsInferred_shownOnThePodsReport() {
    PrefixIndex index = open(1);
    StreamId inferred = StreamId.of(MODEL, "a");
    StreamId other = StreamId.of(MODEL, "b");
    for (StreamId s : List.of(inferred, other)) {
      index.apply(
          s, Events.mode(s), 0, lease(index, s, "owner"), batch(stored(hashes(1, 3), null, null)));
    }
    assertThat(index.markEvictionsInferred(MODEL, "a", 2048, Duration.ofMinutes(1))).isTrue();

    IndexReport report = RedisInspector.of(connector, "t").read(MODEL, null);
    assertThat(report.pods())
        .extracting(IndexReport.Pod::pod, IndexReport.Pod::inferredCapacityBlocks)
        .containsExactlyInAnyOrder(tuple("a", 2048), tuple("b", null));
  }
}
