package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.Connectors;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.PurgeStatus;
import io.kvindex.index.StreamId;
import io.kvindex.localredis.ClusterNode;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A replica promoted on a 3-primary, 3-replica cluster: the index's scan cursors and the routers'
 * cached pod records must not outlive the node they were read on.
 */
@UsesRedisCluster
class RedisFailoverTest {
  private static final String MODEL = "m";
  private static final String INDEX = "failover";
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  private PrefixIndex open(RedisCluster cluster, PrefixIndexBuilder builder) {
    RedisConnector connector = Connectors.connect(cluster, meters);
    opened.add(connector);
    PrefixIndex index =
        builder.indexName(INDEX).redis(connector).lookupPolicy(RetryPolicy.defaults()).build();
    opened.add(index);
    return index;
  }

  /** The primary serving the group's hash tag now. */
  private static ClusterNode primaryOfGroup(RedisCluster cluster) {
    byte[] blocks = new KeySchema(INDEX, 1).blocksKey(0);
    return cluster.cluster().ownerOf(SlotHash.getSlot(blocks));
  }

  /** A replica of that primary, asked of the replicas themselves. */
  private ClusterNode replicaOf(RedisCluster cluster, ClusterNode primary) {
    for (ClusterNode r : cluster.cluster().replicas()) {
      String info = raw(r).info("replication");
      if (info.contains("master_port:" + primary.port())) {
        return r;
      }
    }
    throw new AssertionError("no replica of " + primary.uri());
  }

  private RedisCommands<byte[], byte[]> raw(ClusterNode node) {
    RedisClient client = RedisClient.create(RedisURI.create(node.host(), node.port()));
    StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
    opened.add(client::shutdown);
    opened.add(c);
    return c.sync();
  }

  /** Promotes {@code replica} (graceful when its primary is up, a takeover when it is not). */
  private void promote(RedisCluster cluster, ClusterNode replica, boolean takeover) {
    RedisCommands<byte[], byte[]> r = raw(replica);
    if (takeover) {
      r.clusterFailover(true, true);
    } else {
      r.clusterFailover(false);
    }
    Poll.until(() -> r.info("replication").contains("role:master"), Duration.ofSeconds(30));
    cluster.cluster().awaitHealthy(Duration.ofSeconds(30));
  }

  private static void store(
      PrefixIndex index, StreamId s, Lease lease, long seq, long base, int n) {
    for (int i = 0; i * 64 < n; i++) {
      int from = i * 64;
      Long parent = from == 0 ? null : base + from - 1;
      ApplyStatus status =
          index
              .apply(
                  s,
                  KeyMode.ENGINE,
                  seq + i,
                  lease,
                  batch(stored(hashes(base + from, Math.min(64, n - from)), parent, null)))
              .status();
      assertThat(status).isEqualTo(ApplyStatus.APPLIED);
    }
  }

  private static int depth(PrefixIndex index, String pod, List<Long> keys, String... pods) {
    return index
        .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(pods)))
        .pods()
        .get(pod)
        .depth();
  }

  private static Lease lease(PrefixIndex index, StreamId s) {
    return index.acquireLease(s, "ingester", Duration.ofMinutes(5)).orElseThrow();
  }

  /** Entries naming {@code slot} anywhere in the group's blocks hash, by a scan from 0. */
  private int entriesOfSlot(ClusterNode primary, int slot) {
    RedisCommands<byte[], byte[]> redis = raw(primary);
    byte[] blocks = new KeySchema(INDEX, 1).blocksKey(0);
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
  void gc_replicaPromotedMidPass_passStartsOverAndAReusedSlotInheritsNothing(
      @Fresh(nodeTimeoutMillis = 1000) RedisCluster cluster) {
    PrefixIndex index = open(cluster, PrefixIndex.builder().gcBudget(64));
    StreamId a = StreamId.of(MODEL, "a");
    Lease la = lease(index, a);
    store(index, a, la, 0, 1, 8_000);
    assertThat(index.purge(a, la, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    int scanned = 0;
    while (scanned < 4_000) {
      var step = index.collectGarbage(0, 64);
      assertThat(step.done()).as("half a pass").isFalse();
      scanned += step.fieldsScanned();
    }

    ClusterNode primary = primaryOfGroup(cluster);
    ClusterNode replica = replicaOf(cluster, primary);
    promote(cluster, replica, false); // the same data on another process, another hash seed
    Poll.until(() -> index.collectGarbage(0, 64).done(), Duration.ofSeconds(60));

    StreamId q = StreamId.of(MODEL, "q");
    Lease lq = lease(index, q);
    assertThat(
            index.apply(q, KeyMode.ENGINE, 0, lq, batch(stored(hashes(7, 1), null, null))).status())
        .as("the first write on the promoted replica resets the group")
        .isEqualTo(ApplyStatus.RESET);
    store(index, q, lq, 0, 1_000_000, 3); // takes a's freed slot, the index's first
    assertThat(entriesOfSlot(primaryOfGroup(cluster), 1) - 3)
        .as("entries of a's slot left after the pass that freed it")
        .isZero();
    assertThat(depth(index, "q", hashes(1, 16), "q")).as("q never held a's blocks").isZero();
  }

  @Test
  void lookup_warmRouterAfterFailoverToALaggingReplica_answersWhatTheNewPrimaryHolds(
      @Fresh(nodeTimeoutMillis = 1000) RedisCluster cluster) {
    PrefixIndex writer = open(cluster, PrefixIndex.builder());
    PrefixIndex router = open(cluster, PrefixIndex.builder());
    StreamId p = StreamId.of(MODEL, "p");
    StreamId q = StreamId.of(MODEL, "q");
    StreamId s = StreamId.of(MODEL, "s");
    Lease lp = lease(writer, p);
    store(writer, p, lp, 0, 1, 4); // p: slot 1
    assertThat(depth(router, "p", hashes(1, 4), "p", "q", "s")).isEqualTo(4);

    ClusterNode primary = primaryOfGroup(cluster);
    ClusterNode replica = replicaOf(cluster, primary);
    RedisCommands<byte[], byte[]> onReplica = raw(replica);
    onReplica.readOnly();
    Poll.until(
        () -> onReplica.hlen(new KeySchema(INDEX, 1).blocksKey(0)) > 0, Duration.ofSeconds(10));
    replica.pause();
    raw(primary).clientKill(KillArgs.Builder.typeSlave()); // from here on it misses every write
    assertThat(writer.purge(p, lp, PurgeMode.KEEP_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    store(writer, q, lease(writer, q), 0, 1, 4); // q: slot 2, two slot changes after p's store
    assertThat(depth(router, "q", hashes(1, 4), "p", "q", "s")).isEqualTo(4); // q cached: slot 2

    primary.kill();
    replica.resume();
    promote(cluster, replica, true); // it still has p on slot 1, and no q
    // On the promoted replica: p purged and s stored, which takes slot 2 and brings the slots
    // generation back to the number the router cached q's record at.
    Poll.until( // p's lease came across with the data
        () -> writer.purge(p, lp, PurgeMode.KEEP_WATERMARK) == PurgeStatus.PURGED,
        Duration.ofSeconds(30));
    store(writer, s, lease(writer, s), 0, 100, 4);

    PrefixIndex fresh = open(cluster, PrefixIndex.builder());
    for (String pod : List.of("p", "q", "s")) {
      assertThat(depth(router, pod, hashes(100, 4), "p", "q", "s"))
          .as("warm router, %s", pod)
          .isEqualTo(depth(fresh, pod, hashes(100, 4), "p", "q", "s"));
    }
    assertThat(depth(router, "q", hashes(100, 4), "p", "q", "s"))
        .as("q is not credited with s's blocks")
        .isZero();
    assertThat(depth(router, "s", hashes(100, 4), "p", "q", "s")).isEqualTo(4);
  }
}
