package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.IndexFixtures;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.PrefixIndexContract;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.LocalRedis;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the index keeps exact through Redis losing data or changing process: a restart from its AOF
 * in the middle of a GC pass, a FLUSHALL under a live lease and under a warm router, and the
 * departed-pod sweep racing a heartbeat. Each test fails on the index as it was before the fix it
 * names.
 */
@UsesRedis
class RedisRecoveryTest {
  private static final String MODEL = "m";
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  private RedisConnector connect(RedisStandalone server) {
    RedisConnector c = Connectors.connect(server, meters);
    opened.add(c);
    return c;
  }

  private PrefixIndex open(RedisConnector connector, PrefixIndexBuilder builder) {
    PrefixIndex index =
        builder.indexName("recovery").redis(connector).lookupPolicy(RetryPolicy.defaults()).build();
    opened.add(index);
    return index;
  }

  private RedisCommands<byte[], byte[]> raw(RedisStandalone server) {
    RedisClient client = RedisClient.create(server.uri());
    StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
    opened.add(client::shutdown);
    opened.add(c);
    return c.sync();
  }

  private static Lease lease(PrefixIndex index, StreamId s, String owner) {
    return index.acquireLease(s, owner, Duration.ofMinutes(5)).orElseThrow();
  }

  private static int depth(PrefixIndex index, String pod, List<Long> keys, String... pods) {
    return index
        .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(pods)))
        .pods()
        .get(pod)
        .depth();
  }

  /** Stores {@code n} blocks from {@code base} on a stream, in batches of 64, from seq 0. */
  private static void store(PrefixIndex index, StreamId s, Lease lease, long base, int n) {
    for (int i = 0; i * 64 < n; i++) {
      int from = i * 64;
      List<Long> chunk = hashes(base + from, Math.min(64, n - from));
      Long parent = from == 0 ? null : base + from - 1;
      ApplyStatus status =
          index.apply(s, KeyMode.ENGINE, i, lease, batch(stored(chunk, parent, null))).status();
      assertThat(status).isEqualTo(ApplyStatus.APPLIED);
    }
  }

  /** Entries anywhere in the blocks hash that name {@code slot}, by a scan from 0. */
  private static int entriesOfSlot(RedisCommands<byte[], byte[]> redis, byte[] blocks, int slot) {
    int found = 0;
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      var page = redis.hscan(blocks, cursor, ScanArgs.Builder.limit(1000));
      for (Map.Entry<byte[], byte[]> e : page.getMap().entrySet()) {
        if (e.getKey().length != KeySchema.BLOCK_FIELD_BYTES) {
          continue;
        }
        for (BlockValue.Entry entry : BlockValue.decode(e.getValue()).entries()) {
          if (entry.slot() == slot) {
            found++;
          }
        }
      }
      cursor = page;
    } while (!cursor.isFinished());
    return found;
  }

  @Test
  void gc_restartFromAofMidPass_passStartsOverAndAReusedSlotInheritsNothing(
      @Fresh(settings = {"appendonly yes", "appendfsync always"}) RedisStandalone server) {
    RedisConnector connector = connect(server);
    PrefixIndex index = open(connector, PrefixIndex.builder().gcBudget(64));
    RedisCommands<byte[], byte[]> redis = raw(server);
    byte[] blocks = new KeySchema("recovery", 1).blocksKey(0);
    StreamId a = StreamId.of(MODEL, "a");
    Lease la = lease(index, a, "ingester-1");
    store(index, a, la, 1, 20_000);
    assertThat(index.purge(a, la, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    int scanned = 0;
    while (scanned < 10_000) {
      var step = index.collectGarbage(0, 64);
      assertThat(step.done()).as("half a pass").isFalse();
      scanned += step.fieldsScanned();
    }

    server.node().kill();
    server.node().restart(); // from its AOF: the same data, another process and hash seed
    Poll.until(() -> index.collectGarbage(0, 64).done(), Duration.ofSeconds(60));

    StreamId q = StreamId.of(MODEL, "q");
    Lease lq = lease(index, q, "ingester-1");
    assertThat(
            index.apply(q, KeyMode.ENGINE, 0, lq, batch(stored(hashes(7, 1), null, null))).status())
        .as("the first write on the restarted process resets the group (it may have lost writes)")
        .isEqualTo(ApplyStatus.RESET);
    store(index, q, lq, 1_000_000, 3); // takes a's freed slot
    int reused = 1; // a's slot, the index's first, freed by the pass and taken by q
    assertThat(entriesOfSlot(redis, blocks, reused) - 3)
        .as("entries of a's slot left after the pass that freed it")
        .isZero();
    assertThat(depth(index, "q", hashes(1, 16), "q")).as("q never held a's blocks").isZero();
  }

  @Test
  void apply_flushAllThenTheSameTokenToAnotherOwner_oldOwnerFenced(@Fresh RedisStandalone server) {
    RedisConnector connector = connect(server);
    PrefixIndex index = open(connector, PrefixIndex.builder());
    StreamId s = StreamId.of(MODEL, "p");
    Lease a = lease(index, s, "ingester-a");
    raw(server).flushall();
    Lease b = lease(index, s, "ingester-b");
    assertThat(b.token()).as("the counter started over").isEqualTo(a.token());
    assertThat(index.apply(s, KeyMode.ENGINE, 0, a, batch()).status())
        .isEqualTo(ApplyStatus.FENCED);
  }

  @Test
  void lookup_warmRouterAfterFlushAll_answersWhatTheIndexHolds(@Fresh RedisStandalone server) {
    RedisConnector writerConnection = connect(server);
    RedisConnector routerConnection = connect(server);
    PrefixIndex writer = open(writerConnection, PrefixIndex.builder());
    PrefixIndex router = open(routerConnection, PrefixIndex.builder());
    AtomicInteger resets = new AtomicInteger();
    router.addResetListener((g, what) -> resets.incrementAndGet());
    StreamId p = StreamId.of(MODEL, "p");
    store(writer, p, lease(writer, p, "w"), 1, 4);
    assertThat(depth(router, "p", hashes(1, 4), "p", "q")).isEqualTo(4); // records cached

    raw(server).flushall();
    StreamId q = StreamId.of(MODEL, "q");
    Lease lq = lease(writer, q, "w");
    assertThat(
            writer
                .apply(q, KeyMode.ENGINE, 0, lq, batch(stored(hashes(1, 4), null, null)))
                .status())
        .as("the writer sees the index lost")
        .isEqualTo(ApplyStatus.RESET);
    store(
        writer, q, lq, 1, 4); // q now has slot 1, as p had, and the generation is back where it was

    assertThat(depth(router, "p", hashes(1, 4), "p", "q")).as("p holds nothing now").isZero();
    assertThat(depth(router, "q", hashes(1, 4), "p", "q")).isEqualTo(4);
    assertThat(resets.get()).isEqualTo(1);
    assertThat(meters.get(IndexMeters.RESETS).tag("what", "epoch").counters()).isNotEmpty();
  }

  /**
   * A replica promoted after it missed the last writes (here p's purge) still holds what they
   * undid. Routers credit nothing it holds until a writer's first call on it has reset the group,
   * and that call retires every stream's slot: nothing from before the promotion is shown again.
   */
  @Test
  void lookup_promotedReplicaThatMissedAPurge_creditsNothingFromBeforeThePromotion(
      @Fresh RedisStandalone server) throws Exception {
    try (LocalRedis replica = LocalRedis.builder().start()) {
      RedisCommands<byte[], byte[]> onPrimary = raw(server);
      RedisClient replicaClient = RedisClient.create(RedisURI.create(replica.uri()));
      opened.add(replicaClient::shutdown);
      RedisCommands<byte[], byte[]> onReplica =
          replicaClient.connect(ByteArrayCodec.INSTANCE).sync();
      onReplica.replicaof(server.uri().getHost(), server.uri().getPort());
      PrefixIndex writer = open(connect(server), PrefixIndex.builder());
      StreamId p = StreamId.of(MODEL, "p");
      StreamId q = StreamId.of(MODEL, "q");
      Lease lp = lease(writer, p, "w");
      store(writer, p, lp, 1, 4);
      assertThat(onPrimary.waitForReplication(1, 10_000)).isEqualTo(1L);

      onReplica.replicaofNoOne(); // promoted: a new node history, with p's 4 blocks
      assertThat(writer.purge(p, lp, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
      // ...a purge the promoted replica never got: it still lists p with its 4 blocks.

      RedisConnector toReplica =
          RedisConnector.builder().uri(replica.uri().toString()).meterRegistry(meters).build();
      opened.add(toReplica);
      PrefixIndex router = open(toReplica, PrefixIndex.builder());
      LookupResult beforeReset =
          router.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, 4), List.of("p", "q")));
      assertThat(beforeReset.complete())
          .as("no write on the promoted replica yet: the group is not answered")
          .isFalse();
      assertThat(beforeReset.pods().values()).allMatch(m -> m.depth() == 0);
      assertThat(meters.get(IndexMeters.LOOKUP_NODE_UNVERIFIED).counter().count()).isPositive();

      PrefixIndex newWriter = open(toReplica, PrefixIndex.builder());
      Lease lq = lease(newWriter, q, "w2");
      assertThat(
              newWriter
                  .apply(q, KeyMode.ENGINE, 0, lq, batch(stored(hashes(100, 4), null, null)))
                  .status())
          .as("the first write on the new node history resets the group")
          .isEqualTo(ApplyStatus.RESET);
      store(newWriter, q, lq, 100, 4);
      assertThat(newWriter.watermark(p)).as("p replays from its engine's ring").isEmpty();
      assertThat(depth(router, "p", hashes(1, 4), "p", "q")).as("p's old slot is retired").isZero();
      assertThat(depth(router, "q", hashes(100, 4), "p", "q")).isEqualTo(4);
    }
  }

  @Test
  void sweep_heartbeatBetweenItsPhases_neverCreditsADepartedPodWithAReusedSlot(
      RedisStandalone server) {
    RedisConnector connector = connect(server);
    PrefixIndex index =
        open(
            connector,
            PrefixIndex.builder()
                .podTtl(Duration.ofMillis(50))
                .departedRetention(Duration.ofMillis(1)));
    StreamId p0 = new StreamId(MODEL, "p", 0);
    StreamId p1 = new StreamId(MODEL, "p", 1);
    store(index, p0, lease(index, p0, "w"), 1, 4);
    store(index, p1, lease(index, p1, "w"), 100, 4);
    Poll.until(() -> depth(index, "p", hashes(1, 4), "p") == 0); // p's deadline has passed

    // The streams phase retires p's slots; then p heartbeats before the pods phase runs.
    while (index.sweepDeparted(0, 1000).streamsForgotten() == 0) {
      // one step scans every stream record here
    }
    index.heartbeat(MODEL, "p", Duration.ofMinutes(5));
    PrefixIndexContract.sweepAll(index);
    IndexFixtures.collectAllGarbage(index);

    StreamId q = StreamId.of(MODEL, "q");
    store(index, q, lease(index, q, "w"), 5000, 4); // takes one of p's freed slots
    assertThat(depth(index, "p", hashes(5000, 4), "p"))
        .as("p credited with q's blocks through a slot its record still listed")
        .isZero();
    assertThat(depth(index, "q", hashes(5000, 4), "p", "q")).isEqualTo(4);
  }
}
