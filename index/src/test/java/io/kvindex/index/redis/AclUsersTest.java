package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.index.ApplyStatus;
import io.kvindex.index.IndexFixtures;
import io.kvindex.index.InferenceHandover;
import io.kvindex.index.KeyCheckNote;
import io.kvindex.index.KeyMode;
import io.kvindex.index.Lease;
import io.kvindex.index.LookupRequest;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.ResyncStatus;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RedisRealException;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.Fresh;
import io.kvindex.testing.RedisCluster;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.kvindex.testing.UsesRedisCluster;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The least-privilege ACL users of docs/operations.md, applied as written there: the ingester's
 * user runs every index operation an ingester makes, the router's runs opening, lookups,
 * speculative routes and resync requests, and neither is refused anything on the way ({@code ACL
 * LOG} stays empty: a router sends no EVAL or SCRIPT LOAD); the router's user cannot change an
 * indexed entry, directly or through a script, and every attack tried with it fails: Lua of its
 * own, HGETALL of the blocks hash, writes to keys other than its own, and speculative routes that
 * would last too long. The HTTP side (a router beyond loopback without a token) is
 * ScoringServerAuthTest's, in router-server; the read-only inspect user's is InspectUserTest's, in
 * inspect.
 */
class AclUsersTest {
  private static final String MODEL = "m";
  private static final StreamId STREAM = StreamId.of(MODEL, "pod-a");
  private static final String INDEX = "acl";
  private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");
  private static final Path ACL_FILE =
      Path.of("..", "deploy", "kubernetes", "overlays", "standalone-redis", "redis-users.acl");
  private static final long TEN_YEARS_MS = Duration.ofDays(3650).toMillis();

  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  /**
   * The {@code ACL SETUSER} lines of docs/operations.md, in order: the ingester's, the router's,
   * then the read-only one for {@code kvindex inspect}.
   */
  static List<String> aclLines() throws IOException {
    List<String> lines =
        Files.readAllLines(OPERATIONS).stream()
            .filter(l -> l.startsWith("ACL SETUSER kvindex-"))
            .toList();
    assertThat(lines).as("ACL SETUSER lines in %s", OPERATIONS).hasSize(3);
    return lines;
  }

  /**
   * The ACL file compose and the standalone overlay run Redis with holds the page's lines, the
   * default user's included, as {@code user} lines: one source for both.
   */
  @Test
  void aclFile_holdsTheOperationsPagesLines() throws IOException {
    List<String> documented =
        Files.readAllLines(OPERATIONS).stream()
            .filter(l -> l.startsWith("ACL SETUSER "))
            .map(l -> "user " + l.substring("ACL SETUSER ".length()))
            .toList();
    assertThat(documented).hasSize(4);
    assertThat(Files.readAllLines(ACL_FILE).stream().filter(l -> !l.isBlank()).toList())
        .isEqualTo(documented);
  }

  /** Runs the page's lines on one node, as its default user. */
  private void createUsers(RedisURI node) throws IOException {
    AclFixtures.createUsers(node, aclLines(), opened);
  }

  private static String withUser(String uri, String user) {
    return AclFixtures.withUser(uri, user);
  }

  private RedisConnector connect(String uri) {
    RedisConnector connector =
        RedisConnector.builder().uri(uri).meterRegistry(new SimpleMeterRegistry()).build();
    opened.add(connector);
    return connector;
  }

  /** An ingester's index: it loads the scripts. */
  private PrefixIndex open(RedisConnector connector) {
    return open(connector, true);
  }

  /** A router's index, as KvRouter opens it: it runs the scripts ingesters loaded, no others. */
  private PrefixIndex openAsRouter(RedisConnector connector) {
    return open(connector, false);
  }

  private PrefixIndex open(RedisConnector connector, boolean loadsScripts) {
    return open(connector, loadsScripts, RetryPolicy.defaults());
  }

  private PrefixIndex open(RedisConnector connector, boolean loadsScripts, RetryPolicy lookups) {
    PrefixIndex index =
        PrefixIndex.builder()
            .indexName(INDEX)
            .redis(connector)
            .lookupPolicy(lookups)
            .loadsScripts(loadsScripts)
            .build();
    opened.add(index);
    return index;
  }

  /** Every kind of call an ingester makes, each succeeding. */
  private static void ingest(PrefixIndex index) {
    List<Long> blocks = hashes(500, 20);
    assertThat(index.registerReplica("replica-1", Duration.ofMinutes(1))).isPositive();
    Lease lease = index.acquireLease(STREAM, "replica-1", Duration.ofMinutes(1)).orElseThrow();
    assertThat(index.renewLease(STREAM, lease, Duration.ofMinutes(1))).isTrue();
    assertThat(apply(index, lease, 0, batch(stored(blocks, null, null))))
        .isEqualTo(ApplyStatus.APPLIED);
    assertThat(index.heartbeat(MODEL, STREAM.pod(), Duration.ofSeconds(30))).isTrue();
    index.recordIncarnation(STREAM, null, "1", Duration.ofMinutes(1));
    assertThat(index.incarnation(STREAM)).hasValue("1");
    assertThat(index.watermark(STREAM)).hasValue(0);
    index.checkIdentity();
    assertThat(depth(index, blocks)).isEqualTo(20);
    assertThat(index.livePodsAsync(MODEL).join()).hasValue(List.of(STREAM.pod()));
    assertThat(apply(index, lease, 1, batch(cleared()))).isEqualTo(ApplyStatus.APPLIED);
    assertThat(apply(index, lease, 2, batch(stored(blocks, null, null))))
        .isEqualTo(ApplyStatus.APPLIED);
    index.purgeAsync(STREAM, lease, PurgeMode.RESET_WATERMARK).join();
    IndexFixtures.collectAllGarbage(index);
    for (int g = 0; g < index.groups(); g++) {
      index.sweepDeparted(g, 100);
    }
    assertThat(index.markEvictionsInferred(MODEL, STREAM.pod(), 1024, Duration.ofMinutes(1)))
        .isTrue();
    assertThat(index.touches(STREAM, null, 10).cursor()).isEqualTo("0-0");
    assertThat(
            index
                .handOverInferenceAsync(
                    STREAM, new InferenceHandover(512, new long[] {7}), Duration.ofMinutes(1))
                .join())
        .isTrue();
    assertThat(index.inferenceHandover(STREAM)).isPresent();
    assertThat(index.reportLagAsync(STREAM, Duration.ZERO, Duration.ofMinutes(1)).join()).isTrue();
    assertThat(index.takeResync(STREAM, Duration.ofMillis(1))).isEmpty();
    assertThat(index.releaseLease(STREAM, lease)).isTrue();
    index.deregisterReplica("replica-1");
    Lease again = index.acquireLease(STREAM, "replica-1", Duration.ofMinutes(1)).orElseThrow();
    assertThat(apply(index, again, 0, batch(stored(blocks, null, null))))
        .isEqualTo(ApplyStatus.APPLIED);
  }

  /**
   * What a router does: open, note its models, look up, record a speculative route, look up, ask
   * for a pod's resync.
   */
  private static void route(PrefixIndex index) {
    assertThat(index.noteReaderKeysAsync(MODEL, "engine:sha256_cbor:42:16").join()).isTrue();
    List<Long> blocks = hashes(500, 20);
    assertThat(depth(index, blocks)).isEqualTo(20);
    List<Long> longer = new ArrayList<>(blocks);
    longer.addAll(hashes(900, 4));
    long[] keys = longer.stream().mapToLong(Long::longValue).toArray();
    assertThat(
            index
                .speculateAsync(MODEL, KeyMode.ENGINE, STREAM.pod(), keys, 0, Duration.ofMinutes(1))
                .join())
        .isTrue();
    assertThat(depth(index, longer)).isEqualTo(24);
    assertThat(index.livePodsAsync(MODEL).join()).hasValue(List.of(STREAM.pod()));
    assertThat(
            index
                .requestResyncAsync(MODEL, STREAM.pod(), "router: drift", Duration.ofMinutes(1))
                .join())
        .isEqualTo(ResyncStatus.REQUESTED);
    assertThat(index.evictionsInferredAsync(MODEL, STREAM.pod()).join()).hasValue(1024);
    assertThat(index.touchAsync(MODEL, STREAM.pod(), 0, keys, 0, 0, Duration.ofMinutes(1)).join())
        .isTrue();
    assertThat(index.ingestLagAsync(MODEL, STREAM.pod()).join()).hasSize(1);
  }

  /** The router's user may not write the blocks hash, nor run a writing script on it. */
  private void refusedToRouter(RedisURI node, PrefixIndex routerIndex) {
    RedisURI asRouter = RedisURI.create(node.toURI().toString());
    asRouter.setAuthentication("kvindex-router", "router-password");
    RedisClient client = RedisClient.create(asRouter);
    opened.add(client::shutdown);
    KeySchema keys = new KeySchema(INDEX, 1);
    byte[] blocks = keys.blocks(0);
    try (StatefulRedisConnection<String, String> router = client.connect()) {
      RedisCommands<String, String> sync = router.sync();
      assertThatThrownBy(() -> sync.hset(new String(blocks), "field", "forged"))
          .isInstanceOf(RedisCommandExecutionException.class)
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.del(new String(keys.meta(0)))).hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.set(new String(keys.inferred(MODEL, STREAM.pod())), "1"))
          .as("only the stream's owner marks a pod inferred")
          .hasMessageStartingWith("NOPERM");
    }
    Lease stolen = new Lease(1, "thief");
    assertThatThrownBy(() -> apply(routerIndex, stolen, 9, batch(stored(hashes(1, 2), null, null))))
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOf(RedisRealException.class)
        .hasMessageContaining("NOPERM");
  }

  /**
   * Every attack a holder of the router's credentials could try beyond writing entries, each
   * refused or without effect: Lua of its own, HGETALL of the blocks hash, and speculative routes
   * that would last longer than any route may, whether through the script or written by hand.
   */
  /** A call on a connector that may still be connecting: tried again for up to 10 s. */
  private static <T> T whenConnected(Supplier<RedisFuture<T>> call) {
    long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (true) {
      try {
        return call.get().toCompletableFuture().join();
      } catch (CompletionException e) {
        boolean connecting = String.valueOf(e.getCause().getMessage()).contains("not connected");
        if (!connecting || System.nanoTime() - until > 0) {
          throw e;
        }
        LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
      }
    }
  }

  private void attacksFailAsRouter(RedisURI node, PrefixIndex routerIndex, String routerUri) {
    RedisURI asRouter = RedisURI.create(node.toURI().toString());
    asRouter.setAuthentication("kvindex-router", "router-password");
    RedisClient client = RedisClient.create(asRouter);
    opened.add(client::shutdown);
    KeySchema keys = new KeySchema(INDEX, 1);
    try (StatefulRedisConnection<byte[], byte[]> router = client.connect(ByteArrayCodec.INSTANCE)) {
      RedisCommands<byte[], byte[]> sync = router.sync();
      byte[] blocks = keys.blocks(0);
      // Lua of its own could loop and hold Redis (BUSY) for every client, whatever keys it names.
      assertThatThrownBy(() -> sync.eval("return 1", ScriptOutputType.INTEGER))
          .as("EVAL of Lua of its own")
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(
              () -> sync.eval("return 1", ScriptOutputType.INTEGER, keys.speculativeRoutes(0)))
          .as("EVAL on a key the router may write")
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(
              () ->
                  sync.evalReadOnly(
                      "return 1".getBytes(StandardCharsets.US_ASCII),
                      ScriptOutputType.INTEGER,
                      new byte[][] {blocks}))
          .as("EVAL_RO of Lua of its own")
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.scriptLoad("return redis.call('FLUSHALL')"))
          .as("SCRIPT LOAD")
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.hgetall(blocks))
          .as("HGETALL of the blocks hash")
          .hasMessageStartingWith("NOPERM");
      assertThat(sync.hgetall(keys.pods(0))).as("HGETALL of the pods hash").isNotEmpty();
      // The shared load view has a hash tag of its own (another slot, maybe another node):
      // written and read through the router's own, cluster-aware, connection.
      byte[] load = keys.sharedLoad(MODEL);
      RedisClusterAsyncCommands<byte[], byte[]> shared = connect(routerUri).commands();
      whenConnected(() -> shared.hset(load, bytes("share"), bytes("1|0|0")));
      assertThat(shared.hgetall(load).toCompletableFuture().join())
          .as("HGETALL of the shared load view")
          .hasSize(1);
      shared.hdel(load, bytes("share")).toCompletableFuture().join();
      assertThatThrownBy(() -> sync.hset(keys.pods(0), bytes("pod"), bytes("forged")))
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.set(keys.lease(STREAM), bytes("1:thief")))
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.hset(keys.counts(0), bytes("1:blocks"), bytes("0")))
          .hasMessageStartingWith("NOPERM");
      assertThatThrownBy(() -> sync.hset(keys.meta(0), bytes("epoch"), bytes("forged")))
          .hasMessageStartingWith("NOPERM");

      byte[] routes = keys.speculativeRoutes(0);
      byte[] order = keys.speculativeOrder(0);
      byte[] prefix = HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0);
      assertThatThrownBy(
              () ->
                  sync.evalsha(
                      Scripts.SPECULATE.sha1(),
                      ScriptOutputType.INTEGER,
                      new byte[][] {routes, order},
                      bytes(Long.toString(TEN_YEARS_MS)),
                      keys.pods(0),
                      HashFields.podField(MODEL, STREAM.pod()),
                      new byte[8],
                      bytes("16384"),
                      bytes("8"),
                      HashFields.segmentField(prefix, 7, false),
                      new byte[] {0, 1}))
          .as("speculate.lua, asked for a route of ten years")
          .hasMessageContaining("KVINDEX_SPEC_TTL");
      assertThatThrownBy(
              () ->
                  routerIndex.speculateAsync(
                      MODEL, KeyMode.ENGINE, STREAM.pod(), new long[] {7}, 0, Duration.ofDays(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("at most 60000 ms");

      // An honest route of 24 blocks, 4 past what the pod holds, counts; rewritten by hand to last
      // ten years (a router's user may write spec: keys), it is not credited at all.
      List<Long> forged = new ArrayList<>(hashes(500, 20));
      forged.addAll(hashes(950, 4));
      long[] route = forged.stream().mapToLong(Long::longValue).toArray();
      assertThat(
              routerIndex
                  .speculateAsync(
                      MODEL, KeyMode.ENGINE, STREAM.pod(), route, 0, Duration.ofSeconds(30))
                  .join())
          .isTrue();
      assertThat(depth(routerIndex, forged)).as("an honest route counts").isEqualTo(24);
      long nowMs = Long.parseLong(new String(sync.time().get(0), StandardCharsets.US_ASCII)) * 1000;
      long tenYears = nowMs + TEN_YEARS_MS;
      for (boolean second : new boolean[] {false, true}) {
        byte[] field = HashFields.segmentField(prefix, route[second ? 16 : 0], false);
        byte[] value = sync.hget(routes, field);
        assertThat(value).as("the route's segment field").isNotNull();
        for (int i = 0; i < 6; i++) { // each route: digest (8), deadline (6 bytes), ...
          value[8 + i] = (byte) (tenYears >>> (8 * (5 - i)));
        }
        sync.hset(routes, field, value);
      }
      assertThat(depth(routerIndex, forged))
          .as("a hand-written route lasting longer than any route may is not credited")
          .isEqualTo(20);
      sync.hset(routes, HashFields.segmentField(prefix, route[16], false), bytes("soon"));
      assertThat(depth(routerIndex, forged)).as("nor is one that cannot be read").isEqualTo(20);
      long[] honest = hashes(500, 22).stream().mapToLong(Long::longValue).toArray();
      assertThat(
              routerIndex
                  .speculateAsync(
                      MODEL, KeyMode.ENGINE, STREAM.pod(), honest, 0, Duration.ofSeconds(30))
                  .join())
          .isTrue();
      assertThat(depth(routerIndex, hashes(500, 22))).as("an honest route counts").isEqualTo(22);
    }
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static ApplyStatus apply(
      PrefixIndex index, Lease lease, long seq, io.kvindex.event.KvEventBatch batch) {
    return index.applyAsync(STREAM, KeyMode.ENGINE, seq, lease, batch).join().status();
  }

  private static int depth(PrefixIndex index, List<Long> keys) {
    return index
        .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(STREAM.pod())))
        .pods()
        .get(STREAM.pod())
        .depth();
  }

  private static String aclLog(RedisURI node) {
    RedisClient client = RedisClient.create(node);
    try (StatefulRedisConnection<String, String> admin = client.connect()) {
      return admin.sync().aclLog().stream().map(Object::toString).collect(Collectors.joining("\n"));
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }

  @Nested
  @UsesRedis
  class Standalone {
    @Test
    void users_ingesterRunsEverythingRouterOnlyReadsAndSpeculates(@Fresh RedisStandalone redis)
        throws IOException {
      createUsers(redis.uri());
      String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();

      PrefixIndex ingester = open(connect(withUser(uri, "kvindex-ingester")));
      ingest(ingester);
      PrefixIndex router = openAsRouter(connect(withUser(uri, "kvindex-router")));
      route(router);
      KeyCheckNote check =
          new KeyCheckNote(
              KeyCheckNote.Verdict.MISMATCH,
              "engine:sha256:16",
              "engine:sha256_cbor:16",
              0,
              3,
              "routers are told engine:sha256_cbor:16, but the engines hash as engine:sha256:16",
              1L);
      assertThat(ingester.readerKeysAsync().join()).isPresent();
      assertThat(ingester.noteKeyCheckAsync(STREAM.model(), check).join()).isTrue();
      assertThat(router.keyCheckAsync(STREAM.model()).join()).contains(check);
      assertThat(ingester.takeResync(STREAM, Duration.ofMillis(1))).contains("router: drift");
      assertThat(ingester.touches(STREAM, "0-0", 10).touches()).hasSize(1);
      assertThat(aclLog(redis.uri())).as("ACL LOG").isEmpty();
      refusedToRouter(redis.uri(), router);
      attacksFailAsRouter(redis.uri(), router, withUser(uri, "kvindex-router"));
    }

    /**
     * A node that lost its scripts (SCRIPT FLUSH here; a restart or a failover alike): lookups go
     * on (their fast path is plain reads), the router's speculate sends no EVAL (ACL LOG stays
     * empty), counts the missing script and records nothing; the ingester's next call loads every
     * script again, and the router's routes count again.
     */
    @Test
    void scriptsLost_routerSendsNoEvalAndWaitsForTheIngester(@Fresh RedisStandalone redis)
        throws IOException {
      createUsers(redis.uri());
      String uri = "redis://" + redis.uri().getHost() + ":" + redis.uri().getPort();
      PrefixIndex ingester = open(connect(withUser(uri, "kvindex-ingester")));
      ingest(ingester);
      RedisConnector routerRedis = connect(withUser(uri, "kvindex-router"));
      RetryPolicy lookups =
          RetryPolicy.router().toBuilder().totalBudget(Duration.ofSeconds(1)).build();
      PrefixIndex router = open(routerRedis, false, lookups);
      List<Long> longer = new ArrayList<>(hashes(500, 20));
      longer.addAll(hashes(900, 4));
      long[] keys = longer.stream().mapToLong(Long::longValue).toArray();
      assertThat(depth(router, longer)).as("the node verified once").isEqualTo(20);

      RedisClient admin = RedisClient.create(redis.uri());
      opened.add(admin::shutdown);
      try (StatefulRedisConnection<String, String> connection = admin.connect()) {
        connection.sync().scriptFlush();
      }
      assertThat(depth(router, longer))
          .as("lookups between two verifications are plain reads")
          .isEqualTo(20);
      assertThat(
              router
                  .speculateAsync(
                      MODEL, KeyMode.ENGINE, STREAM.pod(), keys, 0, Duration.ofMinutes(1))
                  .join())
          .as("speculate without its script records nothing")
          .isFalse();
      assertThat(depth(router, longer)).isEqualTo(20);
      assertThat(
              routerRedis.meterRegistry().find("kvindex.redis.script.missing").counters().stream()
                  .mapToDouble(c -> c.count())
                  .sum())
          .isPositive();
      assertThat(aclLog(redis.uri())).as("ACL LOG: no EVAL, no SCRIPT LOAD").isEmpty();

      assertThat(ingester.heartbeat(MODEL, STREAM.pod(), Duration.ofSeconds(30))).isTrue();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      boolean recorded = false;
      while (!recorded && System.nanoTime() < deadline) {
        recorded =
            router
                .speculateAsync(MODEL, KeyMode.ENGINE, STREAM.pod(), keys, 0, Duration.ofMinutes(1))
                .join();
      }
      assertThat(recorded)
          .as("the ingester's call loaded every script again, the router's speculate.lua too")
          .isTrue();
      assertThat(depth(router, longer)).as("the route counts").isEqualTo(24);
      assertThat(aclLog(redis.uri())).as("ACL LOG").isEmpty();
    }
  }

  @Nested
  @UsesRedisCluster
  class Cluster {
    @Test
    void users_onEveryNode_ingesterWritesRouterReadsAndSpeculates(
        @Fresh(replicasPerPrimary = 0) RedisCluster redis) throws IOException {
      for (RedisURI node : redis.uris()) {
        createUsers(node);
      }
      String seeds =
          redis.uris().stream()
              .map(u -> u.getHost() + ":" + u.getPort())
              .collect(Collectors.joining(","));

      PrefixIndex ingester =
          open(connect(withUser("redis-cluster://" + seeds, "kvindex-ingester")));
      ingest(ingester);
      PrefixIndex router =
          openAsRouter(connect(withUser("redis-cluster://" + seeds, "kvindex-router")));
      route(router);
      assertThat(ingester.takeResync(STREAM, Duration.ofMillis(1))).contains("router: drift");
      assertThat(ingester.touches(STREAM, "0-0", 10).touches()).hasSize(1);

      for (RedisURI node : redis.uris()) {
        assertThat(aclLog(node)).as("ACL LOG of %s", node).isEmpty();
      }
      RedisURI owner = ownerOfGroup0(redis);
      refusedToRouter(owner, router);
      attacksFailAsRouter(owner, router, withUser("redis-cluster://" + seeds, "kvindex-router"));
    }

    private RedisURI ownerOfGroup0(RedisCluster redis) {
      KeySchema keys = new KeySchema(INDEX, 1);
      int slot = io.lettuce.core.cluster.SlotHash.getSlot(keys.blocks(0));
      var node = redis.cluster().ownerOf(slot);
      return RedisURI.create(node.uri().toString());
    }
  }
}
