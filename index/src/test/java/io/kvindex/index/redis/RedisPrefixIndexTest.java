package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.removed;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.KvEvent;
import io.kvindex.event.KvEventBatch;
import io.kvindex.index.ApplyStatus;
import io.kvindex.index.BatchRejectedException;
import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.GcResult;
import io.kvindex.index.InMemoryPrefixIndex;
import io.kvindex.index.IndexFixtures;
import io.kvindex.index.IndexMeters;
import io.kvindex.index.IndexMismatchException;
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
import io.kvindex.index.RandomFleet;
import io.kvindex.index.StreamId;
import io.kvindex.redis.LuaScript;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.redis.ScriptRejectedException;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Redis-specific properties: key layout, group count, slots and GC, per-call bound. */
@UsesRedis
class RedisPrefixIndexTest {
  private static final String MODEL = "m";
  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> connection;
  private RedisCommands<byte[], byte[]> redis;
  private RedisConnector connector;
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<PrefixIndex> opened = new ArrayList<>();

  @BeforeEach
  void connect(RedisStandalone server) {
    client = RedisClient.create(server.uri());
    connection = client.connect(ByteArrayCodec.INSTANCE);
    redis = connection.sync();
    connector = Connectors.connect(server, meters);
  }

  @AfterEach
  void disconnect() {
    opened.forEach(PrefixIndex::close);
    connector.close();
    connection.close();
    client.shutdown();
  }

  private PrefixIndex open(PrefixIndexBuilder builder) {
    PrefixIndex index = builder.redis(connector).lookupPolicy(RetryPolicy.defaults()).build();
    opened.add(index);
    return index;
  }

  /** Block fields of a blocks hash, leaving out holder records and counters. */
  private long blockFields(byte[] blocks) {
    return redis.hkeys(blocks).stream()
        .filter(f -> f.length == KeySchema.BLOCK_FIELD_BYTES)
        .count();
  }

  private PrefixIndex open() {
    return open(PrefixIndex.builder().indexName("t"));
  }

  private static Lease lease(PrefixIndex index, StreamId s) {
    return index.acquireLease(s, "owner", Duration.ofMinutes(5)).orElseThrow();
  }

  private List<String> keyNames() {
    return redis.keys("*").stream()
        .map(k -> new String(k, StandardCharsets.UTF_8))
        .sorted()
        .toList();
  }

  @Test
  void keys_hostileIndexName_oneEncodedHashTagPerGroup() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("a{b}:c/d é").groups(2));
    StreamId s = StreamId.of("{model}", "pod:/}{");
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 2), null, null)));
    int g = index.groupOf("{model}", "pod:/}{");
    assertThat(keyNames())
        .allMatch(k -> k.startsWith("kvindex:v1:{a%7Bb%7D%3Ac%2Fd%20%C3%A9/"))
        .contains(
            "kvindex:v1:{a%7Bb%7D%3Ac%2Fd%20%C3%A9/" + g + "}:blocks",
            "kvindex:v1:{a%7Bb%7D%3Ac%2Fd%20%C3%A9/" + g + "}:pods",
            "kvindex:v1:{a%7Bb%7D%3Ac%2Fd%20%C3%A9/" + g + "}:streams")
        .noneMatch(k -> k.contains("{model}") || k.contains("pod:"));
  }

  /**
   * Opening the index loads every script into the script cache: compiling one stalls Redis for
   * about a millisecond, which the first purge or GC call would otherwise pay in mid-traffic.
   */
  @Test
  void open_loadsEveryScript() {
    redis.scriptFlush();
    String[] digests = Scripts.all().stream().map(LuaScript::sha1).toArray(String[]::new);
    assertThat(redis.scriptExists(digests)).containsOnly(false);
    open();
    Poll.until(() -> !redis.scriptExists(digests).contains(false));
  }

  @Test
  void build_otherGroupCount_refused() {
    open(PrefixIndex.builder().indexName("g").groups(2));
    assertThatThrownBy(() -> open(PrefixIndex.builder().indexName("g").groups(3)))
        .isInstanceOf(IndexMismatchException.class)
        .hasMessageContaining("created with 2 groups")
        .hasMessageContaining("groups=2");
    assertThatThrownBy(() -> open(PrefixIndex.builder().indexName("g")))
        .isInstanceOf(IndexMismatchException.class);
    open(PrefixIndex.builder().indexName("g").groups(2));
  }

  @Test
  void build_newIndex_recordsItsFormatInEveryGroup() {
    open(PrefixIndex.builder().indexName("f").groups(2));
    KeySchema keys = new KeySchema("f", 2);
    for (int g = 0; g < 2; g++) {
      assertThat(text(redis.hget(keys.meta(g), bytes("format"))))
          .isEqualTo(Integer.toString(RedisPrefixIndex.FORMAT));
    }
  }

  @Test
  void build_indexOfAnotherFormat_refusedSayingWhatToDo() {
    open(PrefixIndex.builder().indexName("f").groups(2));
    byte[] meta = new KeySchema("f", 2).meta(1);
    String other = Integer.toString(RedisPrefixIndex.FORMAT + 1);
    redis.hset(meta, bytes("format"), bytes(other));

    assertThatThrownBy(() -> open(PrefixIndex.builder().indexName("f").groups(2)))
        .isInstanceOf(IndexMismatchException.class)
        .hasMessageContaining("index 'f' has index format " + other)
        .hasMessageContaining("format " + RedisPrefixIndex.FORMAT)
        .hasMessageContaining("another index name");
    assertThat(text(redis.hget(meta, bytes("format")))).as("left as it was").isEqualTo(other);
  }

  @Test
  void build_indexOlderThanFormats_isFormatOneAndRefused() {
    open(PrefixIndex.builder().indexName("f"));
    byte[] meta = new KeySchema("f", 1).meta(0);
    redis.hdel(meta, bytes("format"));

    assertThatThrownBy(() -> open(PrefixIndex.builder().indexName("f")))
        .isInstanceOf(IndexMismatchException.class)
        .hasMessageContaining("index 'f' has index format 1");
    assertThat(text(redis.hget(meta, bytes("format")))).isEqualTo("1");
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
  }

  @Test
  void purge_slotReusedOnlyAfterGc() {
    PrefixIndex index = open();
    KeySchema keys = new KeySchema("t", 1);
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 3), null, null)));
    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);
    assertThat(redis.llen(keys.free(0))).isZero();
    index.apply(b, Events.mode(b), 0, lease(index, b), batch(stored(hashes(1, 1), null, null)));
    LookupResult r =
        index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, 3), List.of("a", "b")));
    assertThat(r.pods().get("a").depth()).isZero();
    assertThat(r.pods().get("b").depth()).isEqualTo(1);
    // The field of block 1 (its locator, then entries) still carries a's dead entry next to b's
    // until GC strips it.
    byte[] field =
        HashFields.blockField(
            HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0), 1);
    assertThat(redis.hget(keys.blocks(0), field)).hasSize(BlockValue.LOCATOR_BYTES + 4);
    IndexFixtures.collectAllGarbage(index);
    assertThat(redis.hget(keys.blocks(0), field)).hasSize(BlockValue.LOCATOR_BYTES + 2);
    assertThat(blockFields(keys.blocks(0))).isEqualTo(1);
    assertThat(redis.llen(keys.free(0))).isEqualTo(1);
    // a stores again: it takes the freed slot and sees only its new blocks.
    index.apply(a, Events.mode(a), 1, ta, batch(stored(hashes(2, 1), null, null)));
    assertThat(redis.llen(keys.free(0))).isZero();
    r = index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, 3), List.of("a", "b")));
    assertThat(r.pods().get("a").depth()).isZero();
    assertThat(r.pods().get("b").depth()).isEqualTo(1);
  }

  /**
   * The blocks hash may also hold records that are not block or segment fields (any length but 18
   * or 20 bytes, such as a pod's holder record): GC leaves them as they are even when their value
   * looks like an entry of the dead slot.
   */
  @Test
  void gc_fieldsNotEighteenBytes_leftUntouched() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").gcBudget(7));
    KeySchema keys = new KeySchema("t", 1);
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 40), null, null)));
    index.apply(b, Events.mode(b), 0, lease(index, b), batch(stored(hashes(1, 1), null, null)));
    byte[] blockOne =
        HashFields.blockField(
            HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0), 1);
    byte[] shared = redis.hget(keys.blocks(0), blockOne);
    assertThat(shared).as("locator, a's entry, then b's").hasSize(BlockValue.LOCATOR_BYTES + 4);
    byte[] deadEntry =
        Arrays.copyOfRange(shared, BlockValue.LOCATOR_BYTES, BlockValue.LOCATOR_BYTES + 2);
    byte[] record = "holder-record-of-25-bytes".getBytes(StandardCharsets.US_ASCII);
    byte[] shortRecord = "eight-by".getBytes(StandardCharsets.US_ASCII);
    byte[] longBlockLike = new byte[19];
    assertThat(record).hasSize(25);
    redis.hset(keys.blocks(0), record, deadEntry);
    redis.hset(keys.blocks(0), shortRecord, shared);
    redis.hset(keys.blocks(0), longBlockLike, deadEntry);

    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);
    byte[] holderOfB = HashFields.holderField(HashFields.podField(MODEL, "b"));
    byte[] holderOfBValue = redis.hget(keys.blocks(0), holderOfB);
    assertThat(holderOfBValue).as("b's holder record").isNotNull();
    IndexFixtures.collectAllGarbage(index, 7);

    assertThat(redis.llen(keys.free(0))).as("a's slot freed").isEqualTo(1);
    assertThat(redis.hget(keys.blocks(0), blockOne))
        .as("b's entry only")
        .hasSize(BlockValue.LOCATOR_BYTES + 2);
    assertThat(blockFields(keys.blocks(0))).as("only block 1 is left").isEqualTo(1);
    assertThat(redis.hget(keys.blocks(0), record)).isEqualTo(deadEntry);
    assertThat(redis.hget(keys.blocks(0), shortRecord)).isEqualTo(shared);
    assertThat(redis.hget(keys.blocks(0), longBlockLike)).isEqualTo(deadEntry);
    assertThat(redis.hget(keys.blocks(0), holderOfB)).isEqualTo(holderOfBValue);
  }

  @Test
  void gc_slotDiedDuringPass_freedOnlyAfterNextFullPass() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").gcBudget(10));
    KeySchema keys = new KeySchema("t", 1);
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    Lease tb = lease(index, b);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 2000), null, null)));
    index.apply(b, Events.mode(b), 0, tb, batch(stored(hashes(1, 2000), null, null)));
    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);
    GcResult first = index.collectGarbage(0, 10);
    assertThat(first.done()).isFalse();
    index.purge(b, tb, PurgeMode.KEEP_WATERMARK);
    int freed = 0;
    GcResult step = first;
    while (freed == 0) {
      step = index.collectGarbage(0, 10);
      freed += step.slotsFreed();
    }
    assertThat(freed).as("a's slot after the pass it died before").isEqualTo(1);
    assertThat(step.done()).as("b died during that pass").isFalse();
    IndexFixtures.collectAllGarbage(index, 10);
    assertThat(redis.llen(keys.free(0))).isEqualTo(2);
    assertThat(blockFields(keys.blocks(0))).isZero();
  }

  /**
   * A batch of more blocks than a chunk is applied in chunks; the stream record names the blocks of
   * the next batch already done and the digest of its events, and an apply of the same events goes
   * on from there: blocks done are not written again.
   */
  @Test
  void apply_manyBlocks_goesOnFromTheBlockTheRecordNames() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").applyChunkBlocks(16));
    KeySchema keys = new KeySchema("t", 1);
    StreamId s = StreamId.of(MODEL, "a");
    Lease lease = lease(index, s);
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1000, 1), null, null)));
    byte[] field = HashFields.streamField(s);
    String record = new String(redis.hget(keys.streams(0), field), StandardCharsets.UTF_8);
    assertThat(record).endsWith("|0");
    String slot = record.substring(0, record.indexOf('|'));
    KvEventBatch events = batch(stored(hashes(1, 48), null, null));
    String digest = EventPacker.pack(KeyMode.ENGINE, MODEL, events.events(), 16).digest();
    // Blocks 0..31 of batch 1 "done" (by an attempt whose reply was lost, say).
    redis.hset(
        keys.streams(0), field, (slot + "|0|1:32:" + digest).getBytes(StandardCharsets.UTF_8));

    var result = index.apply(s, Events.mode(s), 1, lease, events);

    assertThat(result.status()).isEqualTo(ApplyStatus.APPLIED);
    assertThat(result.blocksStored()).as("only the last chunk was written").isEqualTo(16);
    assertThat(depth(index, 48, "a")).as("blocks 1..32 were not written again").isZero();
    assertThat(
            index
                .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(33, 16), List.of("a")))
                .pods()
                .get("a")
                .depth())
        .isEqualTo(16);
    assertThat(new String(redis.hget(keys.streams(0), field), StandardCharsets.UTF_8))
        .isEqualTo(slot + "|1");
    assertThat(index.apply(s, Events.mode(s), 1, lease, batch()).status())
        .isEqualTo(ApplyStatus.DUPLICATE);
  }

  /** A batch holding what the index cannot store is rejected whole, before anything is written. */
  @Test
  void apply_fieldsTheIndexCannotStore_rejectedWhole() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "a");
    Lease lease = lease(index, s);
    var good = stored(hashes(1, 4), null, null);
    var group = Events.stored(hashes(10, 1), null, List.of(), 16, null, null, 70_000);
    var token = Events.stored(hashes(20, 1), null, List.of(-1), 1, null, null, null);
    for (var bad : List.of(batch(good, group), batch(good, token))) {
      assertThatThrownBy(() -> index.apply(s, Events.mode(s), 0, lease, bad))
          .isInstanceOfSatisfying(
              BatchRejectedException.class, e -> assertThat(e.reason()).isEqualTo("invalid"));
    }
    assertThatThrownBy(() -> index.apply(s, Events.mode(s), (1L << 53) + 1, lease, batch(good)))
        .isInstanceOf(BatchRejectedException.class)
        .hasMessageContaining("2^53");
    assertThat(index.watermark(s)).isEmpty();
    assertThat(depth(index, 4, "a")).isZero();
  }

  /**
   * A call at the largest budget rewrites every field it scans (each keeps a live entry after the
   * dead one is stripped): two values per field must stay within what Lua can unpack.
   */
  @Test
  void gc_atTheBudgetCap_rewritesEveryFieldItScans() {
    int cap = PrefixIndexBuilder.MAX_GC_BUDGET;
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").gcBudget(cap));
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 2 * cap), null, null)));
    index.apply(
        b, Events.mode(b), 0, lease(index, b), batch(stored(hashes(1, 2 * cap), null, null)));
    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);

    GcResult step = index.collectGarbage(0, cap);
    assertThat(step.fieldsScanned()).isGreaterThanOrEqualTo(cap);
    IndexFixtures.collectAllGarbage(index, cap);
    assertThat(depth(index, 2 * cap, "b", "a")).isEqualTo(2 * cap);
    assertThat(depth(index, 2 * cap, "a", "b")).isZero();
    assertThatThrownBy(() -> index.collectGarbage(0, cap + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("budget");
    assertThatThrownBy(() -> PrefixIndex.builder().gcBudget(cap + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("gcBudget");
  }

  /** One route writes a bounded number of fields, whatever the prompt's length. */
  @Test
  void speculate_longRoute_recordsItsFirstBlocksOnly() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", Duration.ofMinutes(1))).isTrue();
    int blocks = 5 * RedisSpeculation.BLOCKS_PER_ROUTE;
    assertThat(
            index
                .speculateAsync(
                    MODEL, KeyMode.ENGINE, "p", Events.keys(1, blocks), 0, Duration.ofMinutes(1))
                .join())
        .isTrue();
    KeySchema keys = new KeySchema("t", 1);
    assertThat(redis.hlen(keys.speculativeRoutes(0)))
        .as("16 segments and 3 spans, and the field that keeps the hash a hashtable")
        .isEqualTo(16 + 3 + 1);
    assertThat(redis.zcard(keys.speculativeOrder(0))).isEqualTo(19);
    assertThat(depth(index, blocks, "p")).isEqualTo(RedisSpeculation.BLOCKS_PER_ROUTE);
  }

  /** Lookups without candidates read the pods hash (an HGETALL) about once a second per model. */
  @Test
  void livePods_readAgainOnlyAfterASecond() {
    PrefixIndex index = open();
    StreamId a = StreamId.of(MODEL, "a");
    index.apply(a, Events.mode(a), 0, lease(index, a), batch(stored(hashes(1, 1), null, null)));
    long before = hgetalls();
    long start = System.nanoTime();
    for (int i = 0; i < 200; i++) {
      assertThat(index.livePodsAsync(MODEL).join()).contains(List.of("a"));
    }
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertThat(hgetalls() - before).isBetween(1L, seconds + 1);
  }

  private long hgetalls() {
    for (String line : redis.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_hgetall:")) {
        return Long.parseLong(line.replaceAll("^cmdstat_hgetall:calls=(\\d+),.*", "$1"));
      }
    }
    return 0;
  }

  @Test
  void speculate_smallRoute_hashtableEncodedForLookups() {
    PrefixIndex index = open();
    assertThat(index.heartbeat(MODEL, "p", Duration.ofMinutes(1))).isTrue();
    assertThat(
            index
                .speculateAsync(
                    MODEL, KeyMode.ENGINE, "p", Events.keys(1, 3), 0, Duration.ofMinutes(1))
                .join())
        .isTrue();
    byte[] key = new KeySchema("t", 1).speculativeRoutes(0);
    // A listpack would answer a lookup's HMGET of its segment fields by a scan per field.
    assertThat(redis.objectEncoding(key)).isEqualTo("hashtable");
  }

  @Test
  void sweepDeparted_tokenMode_dropsRecordsMapAndRetiresSlot() {
    PrefixIndex index =
        open(
            PrefixIndex.builder()
                .indexName("t")
                .podTtl(Duration.ofMillis(50))
                .departedRetention(Duration.ofMillis(50)));
    KeySchema keys = new KeySchema("t", 1);
    StreamId s = StreamId.of("tok", "gone");
    List<Integer> tokens = List.of(1, 2, 3, 4, 5, 6, 7, 8);
    index.apply(
        s,
        Events.mode(s),
        0,
        lease(index, s),
        batch(Events.stored(List.of(11L, 12L), null, tokens, 4, null, null, null)));
    byte[] holder = HashFields.holderField(HashFields.podField("tok", "gone"));
    assertThat(redis.exists(keys.tokenMap(s))).isEqualTo(1);
    assertThat(redis.hget(keys.blocks(0), holder)).isNotNull();
    Poll.until(
        () -> {
          PrefixIndexContract.sweepAll(index);
          return redis.hlen(keys.streams(0)) == 0;
        });
    assertThat(redis.exists(keys.tokenMap(s))).as("token map").isZero();
    assertThat(redis.hlen(keys.pods(0))).as("pod records").isZero();
    assertThat(redis.hget(keys.blocks(0), holder)).as("holder copy").isNull();
    assertThat(redis.hlen(keys.dead(0))).as("its slot retired").isEqualTo(1);
    IndexFixtures.collectAllGarbage(index);
    assertThat(blockFields(keys.blocks(0))).as("its entries collected").isZero();
    assertThat(redis.llen(keys.free(0))).as("its slot free again").isEqualTo(1);
  }

  @Test
  void apply_slotsFull_rejectedUntilGc() {
    PrefixIndex index = open();
    Lease[] tokens = new Lease[4096];
    for (int p = 0; p < 4095; p++) {
      StreamId s = StreamId.of(MODEL, "p" + p);
      tokens[p] = lease(index, s);
      index.apply(s, Events.mode(s), 0, tokens[p], batch(stored(hashes(p, 1), null, null)));
    }
    StreamId last = StreamId.of(MODEL, "last");
    Lease t = lease(index, last);
    assertThatThrownBy(
            () ->
                index.apply(last, Events.mode(last), 0, t, batch(stored(hashes(1, 1), null, null))))
        .isInstanceOfSatisfying(
            BatchRejectedException.class, e -> assertThat(e.reason()).isEqualTo("slots_full"))
        .hasMessageContaining("holder slots")
        .hasCauseInstanceOf(ScriptRejectedException.class);
    assertThat(index.watermark(last)).as("a refused batch changes nothing").isEmpty();
    index.purge(StreamId.of(MODEL, "p7"), tokens[7], PurgeMode.KEEP_WATERMARK);
    assertThatThrownBy(
            () ->
                index.apply(last, Events.mode(last), 0, t, batch(stored(hashes(1, 1), null, null))))
        .isInstanceOf(BatchRejectedException.class);
    IndexFixtures.collectAllGarbage(index);
    assertThat(
            index
                .apply(last, Events.mode(last), 0, t, batch(stored(hashes(1, 1), null, null)))
                .status())
        .isEqualTo(ApplyStatus.APPLIED);
  }

  /**
   * The per-call bound is a property of the work each script does: the purge is O(1) and each GC
   * call examines about {@code budget} fields (the default here), so the test checks the fields
   * each call scanned and that the calls together removed everything. Times are measured, not
   * asserted (a shared machine stretches them; the benchmark reports them): the Redis main thread's
   * CPU time around each call ({@code INFO cpu}, less the cost of the INFO itself) and the slow log
   * are printed.
   */
  @Test
  void purgeAndGc_100kBlockPod_boundedCallsRemoveEverything() {
    PrefixIndex index = open();
    StreamId other = StreamId.of(MODEL, "other");
    index.apply(
        other,
        Events.mode(other),
        0,
        lease(index, other),
        batch(stored(hashes(0, 1000), null, null)));
    StreamId s = StreamId.of(MODEL, "big");
    Lease t = lease(index, s);
    for (int b = 0; b < 100; b++) {
      index.apply(s, Events.mode(s), b, t, batch(stored(hashes(b * 1000L, 1000), null, null)));
    }
    redis.configSet("slowlog-log-slower-than", "1000");
    redis.configSet("hz", "1");
    redis.slowlogReset();
    long infoCost = Long.MAX_VALUE;
    for (int i = 0; i < 20; i++) {
      long before = mainThreadCpuMicros();
      infoCost = Math.min(infoCost, mainThreadCpuMicros() - before);
    }
    List<Long> cpu = new ArrayList<>();
    int calls = 0;
    try {
      long before = mainThreadCpuMicros();
      assertThat(index.purge(s, t, PurgeMode.RESET_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
      cpu.add(mainThreadCpuMicros() - before - infoCost);
      LookupRequest request =
          LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(0, 256), List.of("big", "other"));
      assertThat(index.lookup(request).pods().get("big").depth()).isZero();
      GcResult step;
      int removed = 0;
      do {
        before = mainThreadCpuMicros();
        step = index.collectGarbage(0, PrefixIndexBuilder.DEFAULT_GC_BUDGET);
        cpu.add(mainThreadCpuMicros() - before - infoCost);
        calls++;
        removed += step.entriesRemoved();
        assertThat(step.fieldsScanned())
            .isLessThanOrEqualTo(8 * PrefixIndexBuilder.DEFAULT_GC_BUDGET);
      } while (!step.done());
      assertThat(removed).isEqualTo(100_000);
      cpu.sort(null);
      System.out.printf(
          "purge + GC of a 100k-block pod: %d GC calls; Redis CPU per call: median %d us,"
              + " p99 %d us, max %d us; slow log (wall time, > 1 ms): %s%n",
          calls,
          cpu.get(cpu.size() / 2),
          cpu.get(cpu.size() * 99 / 100),
          cpu.get(cpu.size() - 1),
          slowCommands());
    } finally {
      redis.configSet("slowlog-log-slower-than", "10000");
      redis.configSet("hz", "10");
    }
    assertThat(blockFields(new KeySchema("t", 1).blocks(0))).isEqualTo(1000);
  }

  private static int depth(PrefixIndex index, int blocks, String pod, String... others) {
    List<String> candidates = new ArrayList<>(List.of(others));
    candidates.add(pod);
    return index
        .lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, hashes(1, blocks), candidates))
        .pods()
        .get(pod)
        .depth();
  }

  /** The depths of {@code pods}, in their order, for a lookup of {@code keys} naming them all. */
  private static List<Integer> depth(PrefixIndex index, List<Long> keys, String... pods) {
    var found = index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, keys, List.of(pods))).pods();
    return java.util.Arrays.stream(pods).map(p -> found.get(p).depth()).toList();
  }

  /**
   * A router trusts the pod records it cached only while no record's slots change: a second
   * instance (the ingester, with a cache of its own) purges, clears and restores the pod, and every
   * lookup right after sees the new state.
   */
  @Test
  void lookup_cachedPodRecords_neverOutliveASlotChange() {
    PrefixIndex router = open();
    PrefixIndex ingester = open();
    StreamId s = StreamId.of(MODEL, "p");
    StreamId neighbour = StreamId.of(MODEL, "q");
    Lease t = lease(ingester, s);
    ingester.apply(s, Events.mode(s), 0, t, batch(stored(hashes(1, 4), null, null)));
    ingester.apply(
        neighbour,
        Events.mode(neighbour),
        0,
        lease(ingester, neighbour),
        batch(stored(hashes(1, 3), null, null)));
    assertThat(depth(router, 4, "p", "q")).isEqualTo(4);
    assertThat(depth(router, 4, "p", "q")).isEqualTo(4);

    assertThat(counted(IndexMeters.LOOKUP_REREADS)).isZero();
    assertThat(ingester.purge(s, t, PurgeMode.RESET_WATERMARK)).isEqualTo(PurgeStatus.PURGED);
    assertThat(depth(router, 4, "p", "q")).isZero();
    assertThat(counted(IndexMeters.LOOKUP_REREADS)).isEqualTo(1);
    assertThat(depth(router, 4, "q", "p")).isEqualTo(3);

    ingester.apply(s, Events.mode(s), 0, t, batch(stored(hashes(1, 2), null, null)));
    assertThat(depth(router, 4, "p", "q")).isEqualTo(2);

    ingester.apply(
        s, Events.mode(s), 1, t, batch(Events.cleared(), stored(hashes(1, 1), null, null)));
    assertThat(depth(router, 4, "p", "q")).isEqualTo(1);

    // GC frees the old slots and hands one to a new pod: the old entries stay invisible to it.
    IndexFixtures.collectAllGarbage(ingester);
    IndexFixtures.collectAllGarbage(ingester);
    StreamId late = StreamId.of(MODEL, "late");
    ingester.apply(
        late,
        Events.mode(late),
        0,
        lease(ingester, late),
        batch(stored(hashes(100, 1), null, null)));
    assertThat(depth(router, 4, "late", "p", "q")).isZero();
    assertThat(depth(router, 4, "p", "q", "late")).isEqualTo(1);
  }

  /**
   * Once a router has read its candidates' records, a lookup reads only the slots generation, the
   * unlocated heads, the epoch, the first block's field (whose locator shows the keys start at a
   * segment head) and the prompt's segment (8 blocks, one segment field), and the speculative
   * routes by that segment field: no holder record travels again while nothing changed.
   */
  @Test
  void lookup_steadyState_readsNoHolderRecords() {
    PrefixIndex index = open();
    for (String pod : List.of("a", "b", "c")) {
      StreamId s = StreamId.of(MODEL, pod);
      index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 8), null, null)));
    }
    assertThat(depth(index, 8, "a", "b", "c")).isEqualTo(8);
    assertThat(counted(IndexMeters.LOOKUP_POD_RECORDS)).isEqualTo(3);
    redis.configSet("slowlog-log-slower-than", "0");
    redis.slowlogReset();
    try {
      assertThat(depth(index, 8, "a", "b", "c")).isEqualTo(8);
      List<List<String>> hmgets = slowlogged("hmget", ":blocks");
      assertThat(hmgets).hasSize(1);
      assertThat(hmgets.get(0)).contains("kvindex/slots-generation").hasSize(2 + 3 + 2);
      assertThat(hmgets.get(0).get(6)).endsWith("/s");
      assertThat(slowlogged("hmget", ":spec:routes"))
          .containsExactly(List.of("HMGET", "kvindex:v1:{t/0}:spec:routes", hmgets.get(0).get(6)));
      assertThat(slowlogged("get")).isEmpty();
      assertThat(hmgets.get(0)).noneMatch(a -> a.startsWith("kvindex/holders/"));
      assertThat(counted(IndexMeters.LOOKUP_POD_RECORDS)).isEqualTo(3);
      assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isZero();
    } finally {
      redis.configSet("slowlog-log-slower-than", "10000");
    }
  }

  /**
   * A stream's consecutive batches applied as one call (as a writer behind its engine applies them,
   * each store going on from the one before) write exactly the block fields, segments and spans
   * that applying them one at a time writes.
   */
  @Test
  void applyRange_chainedStoresAsOne_writeWhatOneByOneWrites() {
    PrefixIndex oneByOne = open(PrefixIndex.builder().indexName("one"));
    PrefixIndex asOne = open(PrefixIndex.builder().indexName("merged"));
    List<List<KvEvent>> p = new ArrayList<>();
    for (int from = 0; from < 300; from += 40) {
      int n = Math.min(40, 300 - from);
      p.add(List.of(stored(hashes(1 + from, n), from == 0 ? null : (long) from, null)));
    }
    List<KvEvent> q = List.of(stored(hashes(1, 100), null, null), removed(hashes(60, 5), null));
    for (PrefixIndex index : List.of(oneByOne, asOne)) {
      StreamId sq = StreamId.of(MODEL, "q");
      index.apply(sq, Events.mode(sq), 0, lease(index, sq), KvEventBatch.of(0, q, null));
      StreamId sp = StreamId.of(MODEL, "p");
      Lease t = lease(index, sp);
      int perCall = index == asOne ? 3 : 1;
      for (int first = 0; first < p.size(); first += perCall) {
        int last = Math.min(first + perCall, p.size()) - 1;
        List<KvEvent> events = new ArrayList<>();
        p.subList(first, last + 1).forEach(events::addAll);
        assertThat(
                index
                    .applyAsync(
                        sp, KeyMode.ENGINE, first, last, t, KvEventBatch.of(0, events, null), false)
                    .join()
                    .status())
            .isEqualTo(ApplyStatus.APPLIED);
      }
      assertThat(depth(index, 300, "p", "q")).isEqualTo(300);
    }
    Map<String, String> written = blockAndSegmentFields(new KeySchema("one", 1).blocks(0));
    assertThat(written).hasSizeGreaterThan(300);
    assertThat(blockAndSegmentFields(new KeySchema("merged", 1).blocks(0))).isEqualTo(written);
  }

  /**
   * A blocks hash's block, segment and span fields and values, in hex; a span slot that says "same
   * as the slot before" is shown with those entries (where a chain's growth is cut into calls
   * changes which slots say so, not what they mean).
   */
  private Map<String, String> blockAndSegmentFields(byte[] blocks) {
    Map<String, String> out = new TreeMap<>();
    redis
        .hgetall(blocks)
        .forEach(
            (field, value) -> {
              int n = field.length;
              boolean segment =
                  n == KeySchema.SEGMENT_FIELD_BYTES
                      && field[n - 2] == '/'
                      && (field[n - 1] == 's' || field[n - 1] == 'S');
              if (n == KeySchema.BLOCK_FIELD_BYTES || segment) {
                out.put(
                    HexFormat.of().formatHex(field),
                    HexFormat.of().formatHex(segment ? expanded(value) : value));
              }
            });
    return out;
  }

  /** A segment or span value with each "same as before" slot's entries written out. */
  private static byte[] expanded(byte[] value) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteBuffer in = ByteBuffer.wrap(value);
    byte[] last = new byte[0];
    while (in.remaining() >= 11) {
      byte[] header = new byte[9];
      in.get(header);
      int length = Short.toUnsignedInt(in.getShort());
      byte[] entries = last;
      if (length != 0xFFFF) {
        entries = new byte[length];
        in.get(entries);
      }
      out.writeBytes(header);
      out.write(entries.length >> 8);
      out.write(entries.length & 0xFF);
      out.writeBytes(entries);
      last = entries;
    }
    return out.toByteArray();
  }

  /**
   * Blocks stored under a parent the index never saw have no known chain position, and segments do
   * not list them. A group holding one such chain keeps every other prompt on segments, and the
   * lost chain's own prompt too while its parent is absent (no holder can be credited past it).
   * Once the parent is stored, lookups through it read block fields and credit the unlocated
   * blocks, until they are removed.
   */
  @Test
  void lookup_oneUnlocatedChain_onlyPromptsThroughItsParentReadBlockFields() {
    PrefixIndex index = open();
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    Lease tb = lease(index, b);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 40), null, null)));
    // Chain Y is blocks 101..140; b's store of its first 20 blocks was lost.
    index.apply(b, Events.mode(b), 0, tb, batch(stored(hashes(121, 20), 120L, null)));
    assertThat(unlocated()).isEqualTo(20);

    assertThat(depth(index, hashes(1, 40), "a", "b")).containsExactly(40, 0);
    assertThat(depth(index, hashes(1, 20), "a", "b")).containsExactly(20, 0);
    assertThat(depth(index, hashes(101, 40), "b", "a")).containsExactly(0, 0);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).as("no prompt reaches them").isZero();

    // a stores Y's first 20 blocks, then b does: block 120 is placed, b holds all of Y.
    index.apply(a, Events.mode(a), 1, ta, batch(stored(hashes(101, 20), null, null)));
    index.apply(b, Events.mode(b), 1, tb, batch(stored(hashes(101, 20), null, null)));
    assertThat(depth(index, hashes(101, 40), "b", "a")).containsExactly(40, 20);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isEqualTo(1);
    assertThat(depth(index, hashes(101, 16), "b", "a")).containsExactly(16, 16);
    assertThat(depth(index, hashes(1, 40), "a", "b")).containsExactly(40, 0);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS))
        .as("Y's first segment and X do not pass block 120")
        .isEqualTo(1);

    index.apply(b, Events.mode(b), 2, tb, batch(removed(hashes(121, 20), null)));
    assertThat(unlocated()).isZero();
    assertThat(unlocatedFields()).as("the parents and heads go with the last one").isEmpty();
    assertThat(depth(index, hashes(101, 40), "b", "a")).containsExactly(20, 20);
    assertThat(depth(index, hashes(101, 40), "b", "a")).containsExactly(20, 20);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS))
        .as("one more read by block fields learns that no head is left")
        .isEqualTo(2);
  }

  /**
   * Unlocated blocks stay counted until their fields go, purged ones until GC deletes them; with
   * the last one go the parents and heads that led lookups to them.
   */
  @Test
  void gc_purgedUnlocatedBlocks_countedUntilCollected() {
    PrefixIndex index = open();
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    Lease tb = lease(index, b);
    index.apply(b, Events.mode(b), 0, tb, batch(stored(hashes(21, 5), 20L, null)));
    index.apply(b, Events.mode(b), 1, tb, batch(stored(hashes(40, 3), 39L, null)));
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(40, 1), 39L, null)));
    index.apply(a, Events.mode(a), 1, ta, batch(stored(hashes(1, 20), null, null)));
    assertThat(unlocated()).isEqualTo(8);
    assertThat(depth(index, hashes(1, 25), "b", "a")).containsExactly(0, 20);
    index.purge(b, tb, PurgeMode.KEEP_WATERMARK);
    assertThat(unlocated()).isEqualTo(8);
    IndexFixtures.collectAllGarbage(index);
    assertThat(unlocated()).as("a still holds block 40").isEqualTo(1);
    assertThat(unlocatedFields()).isNotEmpty();
    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);
    IndexFixtures.collectAllGarbage(index);
    assertThat(unlocated()).isZero();
    assertThat(unlocatedFields()).isEmpty();
  }

  /**
   * A segment copies its blocks' entries when they change. Blocks changed during a GC pass that
   * already stripped their segment must not carry a dead slot's entries back into it: else the
   * slot, once freed and handed to another pod, would show that pod holding them.
   */
  @Test
  void gc_segmentsWrittenDuringAPass_neverKeepTheDeadSlot() {
    PrefixIndex index = open();
    KeySchema keys = new KeySchema("t", 1);
    StreamId a = StreamId.of(MODEL, "a");
    StreamId c = StreamId.of(MODEL, "c");
    Lease ta = lease(index, a);
    Lease tc = lease(index, c);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 200), null, null)));
    index.apply(c, Events.mode(c), 0, tc, batch(stored(hashes(1, 200), null, null)));
    index.purge(a, ta, PurgeMode.KEEP_WATERMARK);
    // Over 128 fields: the hash is a hash table, which HSCAN walks a few fields at a time. Between
    // GC calls c adds its CPU tier to the next two blocks, whose values then change once each.
    long seq = 1;
    GcResult step;
    do {
      step = index.collectGarbage(0, 2);
      long next = 1 + 2 * (seq - 1) % 200;
      index.apply(
          c,
          Events.mode(c),
          seq++,
          tc,
          batch(stored(hashes(next, 2), next == 1 ? null : next - 1, "cpu")));
    } while (!step.done());
    assertThat(redis.llen(keys.free(0))).as("a's slot freed").isEqualTo(1);
    int freed =
        Integer.parseInt(new String(redis.lindex(keys.free(0), 0), StandardCharsets.US_ASCII));
    assertThat(entriesOfSlot(keys.blocks(0), freed)).isZero();
    StreamId late = StreamId.of(MODEL, "late");
    index.apply(
        late, Events.mode(late), 0, lease(index, late), batch(stored(hashes(500, 1), null, null)));
    assertThat(redis.llen(keys.free(0))).as("late took a's old slot").isZero();
    assertThat(depth(index, 200, "late", "c")).isZero();
    assertThat(depth(index, 200, "c", "late")).isEqualTo(200);
  }

  /** Entries naming the slot in the hash's block and segment fields. */
  private long entriesOfSlot(byte[] blocks, int slot) {
    long found = 0;
    for (Map.Entry<byte[], byte[]> e : redis.hgetall(blocks).entrySet()) {
      byte[] v = e.getValue();
      List<int[]> runs = new ArrayList<>();
      if (e.getKey().length == KeySchema.BLOCK_FIELD_BYTES) {
        runs.add(new int[] {v.length % 2 == 1 ? BlockValue.LOCATOR_BYTES : 0, v.length});
      } else if (e.getKey().length == KeySchema.SEGMENT_FIELD_BYTES) {
        slotEntries(v).stream().filter(r -> r != null).forEach(runs::add);
      }
      for (int[] run : runs) {
        for (int k = run[0]; k + 1 < run[1]; k += 2) {
          found += (((v[k] & 0xff) << 4) | ((v[k + 1] & 0xf0) >>> 4)) == slot ? 1 : 0;
        }
      }
    }
    return found;
  }

  /**
   * Branches below one head past the segment limit: the segment is marked overflowed, and lookups
   * read its 16 block fields instead (after the first, which finds the mark, in the same HMGET).
   */
  @Test
  void lookup_overflowedSegment_readsItsBlockFields() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").segmentSlots(16));
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    index.apply(a, Events.mode(a), 0, lease(index, a), batch(stored(hashes(1, 20), null, null)));
    // Block 5 sits at offset 4: twelve more blocks below it join the first segment (16 + 11).
    index.apply(b, Events.mode(b), 0, lease(index, b), batch(stored(hashes(100, 12), 5L, null)));
    assertThat(depth(index, 20, "a", "b")).isEqualTo(20);
    assertThat(depth(index, 20, "b", "a")).isZero();
    List<Long> branch = new ArrayList<>(hashes(1, 5));
    branch.addAll(hashes(100, 12));
    LookupResult r =
        index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, branch, List.of("a", "b")));
    assertThat(r.pods().get("a").depth()).isEqualTo(5);
    assertThat(r.pods().get("b").depth()).as("b holds the branch, not blocks 1-5").isZero();
    assertThat(counted(IndexMeters.LOOKUP_OVERFLOW_READS)).isEqualTo(3);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isZero();
  }

  /** Streams that lose no event: every parent is known, so lookups never read block fields. */
  @Test
  void lookups_locatedStreams_readOnlySegments() {
    PrefixIndex index = open(PrefixIndex.builder().indexName("t").groups(3).segmentSlots(4096));
    PrefixIndex model = InMemoryPrefixIndex.of(PrefixIndex.builder().groups(3));
    RandomFleet fleet = new RandomFleet(7L, false);
    for (int round = 0; round < 10; round++) {
      fleet.run(model, index, 30);
      fleet.compareLookups(model, index, 10);
    }
    IndexFixtures.collectAllGarbage(index);
    fleet.compareLookups(model, index, 20);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isZero();
  }

  /**
   * From chain position 256 on, blocks are kept 256 to a span: a lookup of a 600-block prompt reads
   * 16 segments and 2 spans in its one HMGET, through a branch and a removal inside a span.
   */
  @Test
  void lookup_chainPastPosition256_readsOneSpanPer256Blocks() {
    PrefixIndex index = open();
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    Lease ta = lease(index, a);
    Lease tb = lease(index, b);
    index.apply(a, Events.mode(a), 0, ta, batch(stored(hashes(1, 600), null, null)));
    index.apply(b, Events.mode(b), 0, tb, batch(stored(hashes(1, 300), null, null)));
    // b branches after block 299 (position 298), inside the span of positions 256-511.
    index.apply(b, Events.mode(b), 1, tb, batch(stored(hashes(1000, 100), 299L, null)));
    assertThat(depth(index, 600, "a", "b")).isEqualTo(600);
    redis.configSet("slowlog-log-slower-than", "0");
    redis.slowlogReset();
    try {
      assertThat(depth(index, 600, "b", "a")).isEqualTo(300);
      List<String> hmget = slowlogged("hmget", ":blocks").get(0);
      assertThat(hmget).hasSize(2 + 3 + 1 + 16 + 2);
      assertThat(slowlogged("hmget", ":spec:routes").get(0))
          .as("the routes of the segments and spans up to block 1 024")
          .hasSize(2 + 16 + 2);
      assertThat(hmget.subList(hmget.size() - 2, hmget.size())).allMatch(f -> f.endsWith("/S"));
      assertThat(hmget.get(hmget.size() - 3)).endsWith("/s");
    } finally {
      redis.configSet("slowlog-log-slower-than", "10000");
    }
    List<Long> branch = new ArrayList<>(hashes(1, 299));
    branch.addAll(hashes(1000, 100));
    LookupResult r =
        index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, branch, List.of("a", "b")));
    assertThat(r.pods().get("a").depth()).isEqualTo(299);
    assertThat(r.pods().get("b").depth()).isEqualTo(399);
    // The span of positions 256-511 (head: block 257) describes a's 256 blocks and b's 100: held by
    // a and b up to position 298, by a alone from 299, by b alone on the branch. A run's first slot
    // carries the entries, and so does the first slot a call appended (a's blocks came in chunks of
    // 128: position 384 too); the others say they are the same as the slot before.
    assertThat(spanSlots(257)).containsExactly(356, 4);

    index.apply(a, Events.mode(a), 1, ta, batch(removed(hashes(400, 1), null)));
    assertThat(depth(index, 600, "a", "b")).isEqualTo(399);
    assertThat(spanSlots(257)).as("block 400's slot gone, its run goes on").containsExactly(355, 4);
    index.purge(b, tb, PurgeMode.KEEP_WATERMARK);
    IndexFixtures.collectAllGarbage(index);
    IndexFixtures.collectAllGarbage(index);
    // GC strips b: the branch's slots go, and the slots of a's two runs keep their own entries.
    assertThat(spanSlots(257)).containsExactly(255, 3);
    assertThat(depth(index, 600, "a", "b")).isEqualTo(399);
    assertThat(depth(index, 600, "b", "a")).isZero();
    r = index.lookup(LookupRequest.of(MODEL, KeyMode.ENGINE, branch, List.of("a", "b")));
    assertThat(r.pods().get("a").depth()).isEqualTo(299);
    assertThat(r.pods().get("b").depth()).isZero();
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isZero();
    assertThat(counted(IndexMeters.LOOKUP_OVERFLOW_READS)).isZero();
  }

  /**
   * Long chains under a random fleet (branches, removals, clears, restarts): lookups read spans and
   * answer as the in-memory model does, with spans that fit their limit and with spans that
   * overflow (read by their block fields).
   */
  @ParameterizedTest
  @ValueSource(ints = {4096, 16})
  void lookups_longChains_matchTheModel(int segmentSlots) {
    PrefixIndex index =
        open(PrefixIndex.builder().indexName("t").groups(3).segmentSlots(segmentSlots));
    PrefixIndex model = InMemoryPrefixIndex.of(PrefixIndex.builder().groups(3));
    RandomFleet fleet = new RandomFleet(11L, false, 700);
    for (int round = 0; round < 6; round++) {
      fleet.run(model, index, 100);
      fleet.compareLookups(model, index, 10);
    }
    IndexFixtures.collectAllGarbage(index);
    fleet.compareLookups(model, index, 20);
    assertThat(counted(IndexMeters.LOOKUP_BLOCK_READS)).isZero();
    long spans = 0;
    for (int g = 0; g < 3; g++) {
      for (byte[] field : redis.hkeys(new KeySchema("t", 3).blocks(g))) {
        spans += field.length == KeySchema.SEGMENT_FIELD_BYTES && field[19] == 'S' ? 1 : 0;
      }
    }
    assertThat(spans).as("span fields").isPositive();
    if (segmentSlots == 16) {
      assertThat(counted(IndexMeters.LOOKUP_OVERFLOW_READS)).isPositive();
    }
  }

  /** A span's slots, and how many of them carry entries of their own (group 0, cache group 0). */
  private int[] spanSlots(long headKey) {
    byte[] prefix = HashFields.fieldPrefix(HashFields.scope(KeyMode.ENGINE, MODEL), 0);
    byte[] v =
        redis.hget(new KeySchema("t", 1).blocks(0), HashFields.segmentField(prefix, headKey, true));
    List<int[]> slots = slotEntries(v);
    return new int[] {slots.size(), (int) slots.stream().filter(r -> r != null).count()};
  }

  /**
   * Per slot of a segment or span value, where its own entries lie ({from, to}), or null for a slot
   * that has the entries of the slot before it.
   */
  private static List<int[]> slotEntries(byte[] v) {
    List<int[]> slots = new ArrayList<>();
    for (int i = 0; i + 11 <= v.length; ) {
      int length = ((v[i + 9] & 0xff) << 8) | (v[i + 10] & 0xff);
      if (length == SegmentValue.SAME_AS_BEFORE) {
        slots.add(null);
        i += 11;
      } else {
        slots.add(new int[] {i + 11, i + 11 + length});
        i += 11 + length;
      }
    }
    return slots;
  }

  /**
   * The slow log's commands of one name (every command, when its threshold is 0), newest first,
   * each as its arguments.
   */
  private List<List<String>> slowlogged(String command) {
    return slowlogged(command, "");
  }

  /** The commands logged whose name is {@code command} and whose key ends with {@code key}. */
  private List<List<String>> slowlogged(String command, String key) {
    List<List<String>> found = new ArrayList<>();
    for (Object entry : redis.slowlogGet(100)) {
      List<String> args = new ArrayList<>();
      for (Object arg : (List<?>) ((List<?>) entry).get(3)) {
        args.add(new String((byte[]) arg, StandardCharsets.ISO_8859_1));
      }
      if (args.get(0).equalsIgnoreCase(command) && args.get(1).endsWith(key)) {
        found.add(args);
      }
    }
    return found;
  }

  /** The blocks hash's unlocated parents and heads fields that exist. */
  private List<String> unlocatedFields() {
    List<String> found = new ArrayList<>();
    for (String name : List.of("kvindex/unlocated-parents", "kvindex/unlocated-heads")) {
      if (redis.hget(new KeySchema("t", 1).blocks(0), name.getBytes(StandardCharsets.US_ASCII))
          != null) {
        found.add(name);
      }
    }
    return found;
  }

  private long unlocated() {
    byte[] v = redis.hget(new KeySchema("t", 1).blocks(0), KeySchema.UNLOCATED_FIELD);
    return v == null ? 0 : Long.parseLong(new String(v, StandardCharsets.US_ASCII));
  }

  /**
   * The identity check is a writer's maintenance call, made in every ingester coordination round:
   * it waits out a brief stall of Redis within the write budget. Under the routing path's 5 ms it
   * gave up on a loaded host, and the round it was part of was skipped with it.
   */
  @Test
  void checkIdentity_waitsOutABriefStall() {
    PrefixIndex index = PrefixIndex.builder().indexName("t").redis(connector).build();
    opened.add(index); // the default lookup policy: the routing path's 5 ms
    redis.clientPause(300); // every client's next command waits 300 ms
    assertThat(index.checkIdentity()).isFalse();
  }

  /** Each lease given up is counted, for replicas short of their share to take it at once. */
  @Test
  void releaseLease_isCountedInLeaseReleases() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "p");
    assertThat(index.leaseReleases()).isZero();
    Lease lease = lease(index, s);
    assertThat(index.releaseLease(s, lease)).isTrue();
    assertThat(index.releaseLease(s, lease)).as("not held any more").isFalse();
    assertThat(index.leaseReleases()).isEqualTo(1);
  }

  private double counted(String meter) {
    return meters.get(meter).tag("index", "t").counter().count();
  }

  private long mainThreadCpuMicros() {
    String info = redis.info("cpu");
    double seconds = 0;
    for (String line : info.lines().toList()) {
      if (line.startsWith("used_cpu_user_main_thread:")
          || line.startsWith("used_cpu_sys_main_thread:")) {
        seconds += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
      }
    }
    return Math.round(seconds * 1_000_000);
  }

  private List<String> slowCommands() {
    List<String> slow = new ArrayList<>();
    for (Object entry : redis.slowlogGet(1000)) {
      List<?> e = (List<?>) entry;
      String command = new String((byte[]) ((List<?>) e.get(3)).get(0), StandardCharsets.UTF_8);
      slow.add(e.get(2) + " us " + command);
    }
    return slow;
  }
}
