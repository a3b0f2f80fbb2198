package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.LookupResult;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.localredis.LocalRedisCluster.SlotMigration;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisUnavailableException;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The index group's hash slot moves to another primary (CLUSTER SETSLOT and MIGRATE, as {@code
 * redis-cli --cluster reshard} does) while a writer applies a stream's batches and a router looks
 * them up: the data arrives whole with its keys, so the new node takes it as it is, with no reset,
 * no purge and no replay; meanwhile writes wait (TRYAGAIN, ASK) and go on, and every lookup answers
 * what was written or "unavailable", never more. A failover afterwards still resets. The
 * migration's figures are printed: run it on a big index with
 *
 * <pre>
 * mvn -pl common -am test -Dtest=RedisSlotMigrationTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dkvindex.measure.migrationBlocks=1000000
 * </pre>
 */
@UsesRedisCluster
class RedisSlotMigrationTest {
  private static final String MODEL = "m";
  private static final String INDEX = "moved";
  private static final int BATCH = 128;

  /** Blocks of p's chain before the writer starts. */
  private static final int START = 300;

  /** Blocks per batch the writer applies while the slot moves. */
  private static final int LIVE_BATCH = 8;

  /** Batches the writer applies at most (so its chain stays within one lookup). */
  private static final int LIVE_BATCHES = 300;

  /** The blocks every lookup asks for: p's chain, as long as it can grow. */
  private static final int CHAIN = START + LIVE_BATCH * LIVE_BATCHES;

  /** The first key of the bulk stream's chain, which makes the blocks hash big. */
  private static final long BULK_BASE = 1L << 40;

  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  @Test
  void migrateSlot_underWritesAndReads_keepsTheGroupWholeWhileAFailoverAfterStillResets(
      @Fresh(nodeTimeoutMillis = 1000) RedisCluster cluster) throws Exception {
    int bulk = Integer.getInteger("kvindex.measure.migrationBlocks", 2_000);
    PrefixIndex writer = open(cluster);
    PrefixIndex router = open(cluster);
    StreamId p = StreamId.of(MODEL, "p");
    StreamId q = StreamId.of(MODEL, "q");
    StreamId b = StreamId.of(MODEL, "b");
    Lease lp = lease(writer, p);
    Lease lq = lease(writer, q);
    long seqP = store(writer, p, lp, 0, 1, START);
    store(writer, q, lq, 0, 1, 40);
    store(writer, b, lease(writer, b), 0, BULK_BASE, bulk); // the bulk of the blocks hash
    assertThat(depths(router, CHAIN)).containsExactly(START, 40);
    assertThat(bulkDepth(router)).isEqualTo(Math.min(bulk, 300));
    assertThat(writer.checkIdentity()).isFalse(); // the ingester's periodic check sees the node

    int slot = SlotHash.getSlot(new KeySchema(INDEX, 1).blocksKey(0));
    ClusterNode from = cluster.cluster().ownerOf(slot);
    ClusterNode to =
        cluster.cluster().primaries().stream().filter(n -> n != from).findFirst().orElseThrow();
    long blocksBytes = raw(from).memoryUsage(new KeySchema(INDEX, 1).blocksKey(0));

    LiveRouter reading = new LiveRouter(router);
    LiveWriter live = new LiveWriter(writer, p, lp, seqP, reading);
    reading.writer = live;
    Thread w = new Thread(live, "writer");
    Thread r = new Thread(reading, "router");
    r.start();
    w.start();
    try {
      Poll.until(() -> live.acked.get() >= START + 20 * LIVE_BATCH || live.done);
      long ackedBefore = live.acked.get();
      long attemptsBefore = live.attempts.get();
      long lookupsBefore = reading.lookups.get();
      long unavailableBefore = reading.unavailable.get();
      // One key per MIGRATE, and after each the router looks the chain up twice more while the
      // writer goes on: the group's keys are split between the two nodes meanwhile.
      SlotMigration moved =
          cluster
              .cluster()
              .migrateSlot(
                  slot,
                  to,
                  1,
                  () -> {
                    long looked = reading.lookups.get();
                    Poll.until(
                        () -> reading.lookups.get() >= looked + 2 || reading.stopped,
                        Duration.ofSeconds(60));
                  });
      long ackedAfter = live.acked.get();
      live.migrated = true;
      System.out.printf(
          "slot migration: %d blocks (blocks hash %d bytes), %d keys in %d MIGRATE calls, longest"
              + " %d ms; SETSLOT IMPORTING to the last SETSLOT NODE %d ms (with the test's waits),"
              + " meanwhile %d apply calls (%d blocks applied), %d lookups (%d unavailable)%n",
          bulk + START + 40,
          blocksBytes,
          moved.keys(),
          moved.migrateCalls(),
          moved.longestMigrate().toMillis(),
          moved.took().toMillis(),
          live.attempts.get() - attemptsBefore,
          ackedAfter - ackedBefore,
          reading.lookups.get() - lookupsBefore,
          reading.unavailable.get() - unavailableBefore);
      assertThat(cluster.cluster().ownerOf(slot)).isSameAs(to);
      // The writer goes on there, and the router reads it there.
      Poll.until(
          () -> live.acked.get() >= ackedAfter + 20 * LIVE_BATCH || live.done,
          Duration.ofSeconds(60));
    } finally {
      live.stop = true;
      reading.stop = true;
      w.join();
      r.join();
    }
    System.out.printf(
        "while the slot moved: %d writes waited past their retries, %d of %d lookups answered"
            + " unavailable%n",
        live.unavailable.get(), reading.unavailable.get(), reading.lookups.get());
    assertThat(live.failure).as("the writer").isNull();
    assertThat(reading.failures).as("lookups crediting other than what was written").isEmpty();
    assertThat(reading.lookups.get() - reading.unavailable.get())
        .as("lookups answered")
        .isPositive();
    int written = (int) live.acked.get();
    assertThat(written).isGreaterThanOrEqualTo(START + 40 * LIVE_BATCH);

    // Afterwards the index is exact, for the router that read throughout and for a new one (which
    // verifies the node before its first read): nothing was purged, nothing is replayed.
    assertThat(depths(router, CHAIN)).containsExactly(written, 40);
    PrefixIndex another = open(cluster);
    assertThat(depths(another, CHAIN)).containsExactly(written, 40);
    assertThat(bulkDepth(another)).isEqualTo(Math.min(bulk, 300));
    assertThat(writer.checkIdentity()).as("the ingester's periodic check: no reset").isFalse();
    assertThat(resets()).as("groups found reset").isZero();
    assertThat(counted(IndexMeters.LOOKUP_NODE_UNVERIFIED)).isZero();
    assertThat(
            writer
                .apply(q, KeyMode.ENGINE, 1, lq, batch(stored(hashes(41, 1), 40L, null)))
                .status())
        .as("q's next batch, its watermark kept")
        .isEqualTo(ApplyStatus.APPLIED);

    // A failover of the new node's primary after that: its replica may lack the last writes.
    ClusterNode replica = replicaOf(cluster, to);
    RedisCommands<byte[], byte[]> raw = raw(replica);
    raw.clusterFailover(false);
    Poll.until(() -> raw.info("replication").contains("role:master"), Duration.ofSeconds(30));
    cluster.cluster().awaitHealthy(Duration.ofSeconds(30));
    assertThat(
            writer
                .apply(q, KeyMode.ENGINE, 2, lq, batch(stored(hashes(42, 1), 41L, null)))
                .status())
        .as("the first write after the failover")
        .isEqualTo(ApplyStatus.RESET);
  }

  /**
   * Applies one chain's batches in order, one per lookup the router makes, as an ingester does: a
   * batch that Redis kept refusing for the moment (SWALLOWED) is held and sent again; anything but
   * APPLIED (or DUPLICATE, for a batch whose call ran but whose answer was lost) stops it. Past
   * half its batches it waits for the migration to be over, so that some of them are applied after
   * it.
   */
  private static final class LiveWriter implements Runnable {
    private final PrefixIndex index;
    private final StreamId stream;
    private final Lease lease;
    private final LiveRouter router;
    private long seq;

    /** The chain's blocks whose batch was applied, and those whose batch was sent. */
    final AtomicLong acked;

    final AtomicLong sent;
    final AtomicLong unavailable = new AtomicLong();

    /** Apply calls begun, a batch sent again after its retries counting again. */
    final AtomicLong attempts = new AtomicLong();

    volatile boolean stop;
    volatile boolean migrated;
    volatile boolean done;
    volatile Object failure;

    LiveWriter(PrefixIndex index, StreamId stream, Lease lease, long seq, LiveRouter router) {
      this.index = index;
      this.stream = stream;
      this.lease = lease;
      this.router = router;
      this.seq = seq;
      this.acked = new AtomicLong(START);
      this.sent = new AtomicLong(START);
    }

    @Override
    public void run() {
      try {
        for (int i = 0; i < LIVE_BATCHES && !stop; i++) {
          if (i == LIVE_BATCHES / 2) {
            Poll.until(() -> migrated || stop, Duration.ofSeconds(60));
          }
          long first = acked.get() + 1;
          sent.set(first + LIVE_BATCH - 1);
          var events = batch(stored(hashes(first, LIVE_BATCH), first - 1, null));
          ApplyStatus status;
          while (true) {
            try {
              attempts.incrementAndGet();
              status = index.apply(stream, KeyMode.ENGINE, seq, lease, events).status();
              if (status != ApplyStatus.SWALLOWED) {
                break;
              }
            } catch (RedisUnavailableException e) {
              // as SWALLOWED: the batch is held and sent again
            }
            unavailable.incrementAndGet();
          }
          if (status != ApplyStatus.APPLIED && status != ApplyStatus.DUPLICATE) {
            failure = "batch " + seq + ": " + status;
            return;
          }
          seq++;
          acked.set(first + LIVE_BATCH - 1);
          long looked = router.lookups.get();
          Poll.until(() -> router.lookups.get() > looked || stop, Duration.ofSeconds(60));
        }
      } catch (RuntimeException | AssertionError e) {
        failure = e;
      } finally {
        done = true;
      }
    }
  }

  /**
   * Looks the chain up for both pods, again and again: an answer must credit p with at least what
   * was applied before it was asked and at most what was sent by the time it came, and q with its
   * 40 blocks; or be incomplete ("unavailable").
   */
  private static final class LiveRouter implements Runnable {
    private final PrefixIndex index;
    volatile LiveWriter writer;
    final AtomicLong lookups = new AtomicLong();
    final AtomicLong unavailable = new AtomicLong();
    final List<String> failures = new CopyOnWriteArrayList<>();
    volatile boolean stop;
    volatile boolean stopped;

    LiveRouter(PrefixIndex index) {
      this.index = index;
    }

    @Override
    public void run() {
      try {
        lookUp();
      } finally {
        stopped = true;
      }
    }

    private void lookUp() {
      LookupRequest request =
          LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, CHAIN), List.of("p", "q"));
      while (!stop && failures.size() < 10) {
        long atLeast = writer.acked.get();
        LookupResult result;
        try {
          result = index.lookup(request);
        } catch (RuntimeException e) {
          failures.add("lookup failed: " + e);
          continue;
        }
        long atMost = writer.sent.get();
        lookups.incrementAndGet();
        if (!result.complete()) {
          unavailable.incrementAndGet();
          continue;
        }
        int p = result.pods().get("p").depth();
        int q = result.pods().get("q").depth();
        if (p < atLeast || p > atMost || q != 40) {
          failures.add("p " + p + " (written " + atLeast + ".." + atMost + "), q " + q);
        }
      }
    }
  }

  private PrefixIndex open(RedisCluster cluster) {
    RedisConnector connector = Connectors.connect(cluster, meters);
    opened.add(connector);
    PrefixIndex index =
        PrefixIndex.builder()
            .indexName(INDEX)
            .redis(connector)
            .lookupPolicy(RetryPolicy.defaults())
            .podTtl(Duration.ofHours(1))
            .build();
    opened.add(index);
    return index;
  }

  private RedisCommands<byte[], byte[]> raw(ClusterNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    StatefulRedisConnection<byte[], byte[]> c =
        client.connect(io.lettuce.core.codec.ByteArrayCodec.INSTANCE);
    opened.add(client::shutdown);
    opened.add(c);
    return c.sync();
  }

  private ClusterNode replicaOf(RedisCluster cluster, ClusterNode primary) {
    for (ClusterNode n : cluster.cluster().replicas()) {
      if (raw(n).info("replication").contains("master_port:" + primary.port())) {
        return n;
      }
    }
    throw new AssertionError("no replica of " + primary.uri());
  }

  /** Stores blocks base.. of one chain in batches; returns the next sequence number. */
  private static long store(
      PrefixIndex index, StreamId s, Lease lease, long seq, long base, int n) {
    for (int from = 0; from < n; from += BATCH) {
      Long parent = from == 0 ? null : base + from - 1;
      assertThat(
              index
                  .apply(
                      s,
                      KeyMode.ENGINE,
                      seq++,
                      lease,
                      batch(stored(hashes(base + from, Math.min(BATCH, n - from)), parent, null)))
                  .status())
          .isEqualTo(ApplyStatus.APPLIED);
    }
    return seq;
  }

  /** The depths of p and q for the chain's first {@code blocks} blocks. */
  private static List<Integer> depths(PrefixIndex index, int blocks) {
    var pods =
        index
            .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, blocks), List.of("p", "q")))
            .pods();
    return List.of(pods.get("p").depth(), pods.get("q").depth());
  }

  /** The depth of the bulk stream's pod for the first 300 blocks of its chain. */
  private static int bulkDepth(PrefixIndex index) {
    return index
        .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(BULK_BASE, 300), List.of("b")))
        .pods()
        .get("b")
        .depth();
  }

  private double resets() {
    return meters.find(IndexMeters.RESETS).counters().stream().mapToDouble(Counter::count).sum();
  }

  private double counted(String meter) {
    return meters.find(meter).counters().stream().mapToDouble(Counter::count).sum();
  }

  private static Lease lease(PrefixIndex index, StreamId s) {
    return index.acquireLease(s, "ingester", Duration.ofMinutes(10)).orElseThrow();
  }
}
