package io.kvindex.index.redis;

import static io.kvindex.index.Events.batch;
import static io.kvindex.index.Events.cleared;
import static io.kvindex.index.Events.hashes;
import static io.kvindex.index.Events.stored;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvindex.index.Connectors;
import io.kvindex.index.Events;
import io.kvindex.index.Lease;
import io.kvindex.index.Poll;
import io.kvindex.index.PrefixIndex;
import io.kvindex.index.PrefixIndexBuilder;
import io.kvindex.index.PrefixIndexContract;
import io.kvindex.index.PurgeMode;
import io.kvindex.index.StreamId;
import io.kvindex.redis.RedisConnector;
import io.kvindex.redis.RetryPolicy;
import io.kvindex.testing.RedisStandalone;
import io.kvindex.testing.UsesRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the scripts record for inspection beside the index itself: each stream's last apply and
 * purge, the overflowed segments, the stored format version, and the notes writers and routers
 * leave about how they key each model.
 */
@UsesRedis
class InspectionRecordsTest {
  private static final String MODEL = "m";
  private final KeySchema keys = new KeySchema("t", 1);
  private RedisClient client;
  private StatefulRedisConnection<byte[], byte[]> connection;
  private RedisCommands<byte[], byte[]> redis;
  private RedisConnector connector;
  private final List<PrefixIndex> opened = new ArrayList<>();

  @BeforeEach
  void connect(RedisStandalone server) {
    client = RedisClient.create(server.uri());
    connection = client.connect(ByteArrayCodec.INSTANCE);
    redis = connection.sync();
    connector = Connectors.connect(server);
  }

  @AfterEach
  void disconnect() {
    opened.forEach(PrefixIndex::close);
    connector.close();
    connection.close();
    client.shutdown();
  }

  private PrefixIndex open(PrefixIndexBuilder builder) {
    PrefixIndex index =
        builder.indexName("t").redis(connector).lookupPolicy(RetryPolicy.defaults()).build();
    opened.add(index);
    return index;
  }

  private PrefixIndex open() {
    return open(PrefixIndex.builder());
  }

  private static Lease lease(PrefixIndex index, StreamId s) {
    return index.acquireLease(s, "owner", Duration.ofMinutes(5)).orElseThrow();
  }

  private long serverMillis() {
    List<byte[]> t = redis.time();
    return Long.parseLong(text(t.get(0))) * 1000 + Long.parseLong(text(t.get(1))) / 1000;
  }

  private static String text(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  private static byte[] field(char kind, StreamId s) {
    byte[] stream = HashFields.streamField(s);
    return ByteBuffer.allocate(1 + stream.length).put((byte) kind).put(stream).array();
  }

  private String activity(char kind, StreamId s) {
    return text(redis.hget(keys.activity(0), field(kind, s)));
  }

  @Test
  void apply_recordsItsTimePerStream() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "a");
    long before = serverMillis();
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 3), null, null)));
    long after = serverMillis();

    assertThat(Long.parseLong(activity('a', s))).isBetween(before, after);
    assertThat(activity('p', s)).as("no purge yet").isNull();
  }

  @Test
  void purge_recordsItsTimeAndTheSlotItRetired() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "a");
    Lease lease = lease(index, s);
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1, 3), null, null)));
    String slot = slotOf(s);
    long before = serverMillis();

    index.purge(s, lease, PurgeMode.KEEP_WATERMARK);

    String[] purge = activity('p', s).split("\\|");
    assertThat(Long.parseLong(purge[0])).isBetween(before, serverMillis());
    assertThat(purge[1]).isEqualTo(slot);
  }

  @Test
  void apply_allBlocksCleared_recordedAsAPurgeOfTheOldSlot() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "a");
    Lease lease = lease(index, s);
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1, 3), null, null)));
    String slot = slotOf(s);

    index.apply(s, Events.mode(s), 1, lease, batch(cleared(), stored(hashes(9, 2), null, null)));

    assertThat(activity('p', s).split("\\|")[1]).isEqualTo(slot);
    assertThat(slotOf(s)).isNotEqualTo(slot);
  }

  @Test
  void sweepDeparted_forgetsTheStreamsActivity() {
    PrefixIndex index =
        open(
            PrefixIndex.builder()
                .podTtl(Duration.ofMillis(50))
                .departedRetention(Duration.ofMillis(50)));
    StreamId s = StreamId.of(MODEL, "gone");
    Lease lease = lease(index, s);
    index.apply(s, Events.mode(s), 0, lease, batch(stored(hashes(1, 3), null, null)));
    index.purge(s, lease, PurgeMode.KEEP_WATERMARK);
    assertThat(redis.hlen(keys.activity(0))).isEqualTo(2);

    Poll.until(
        () -> {
          PrefixIndexContract.sweepAll(index);
          return redis.hlen(keys.streams(0)) == 0;
        });

    assertThat(redis.hlen(keys.activity(0))).isZero();
  }

  /** A segment is counted when it overflows, once: it stays overflowed. */
  @Test
  void apply_segmentOverflows_countedOnce() {
    PrefixIndex index = open(PrefixIndex.builder().segmentSlots(16));
    StreamId a = StreamId.of(MODEL, "a");
    StreamId b = StreamId.of(MODEL, "b");
    index.apply(a, Events.mode(a), 0, lease(index, a), batch(stored(hashes(1, 20), null, null)));
    assertThat(redis.hget(keys.counts(0), SlotCounts.OVERFLOWED_SEGMENTS_FIELD)).isNull();
    Lease lb = lease(index, b);
    index.apply(b, Events.mode(b), 0, lb, batch(stored(hashes(100, 12), 5L, null)));
    index.apply(b, Events.mode(b), 1, lb, batch(stored(hashes(200, 12), 5L, null)));

    assertThat(text(redis.hget(keys.counts(0), SlotCounts.OVERFLOWED_SEGMENTS_FIELD)))
        .isEqualTo("1");
  }

  @Test
  void open_newGroup_recordsTheStoredVersion() {
    open(PrefixIndex.builder().groups(2));
    for (int g = 0; g < 2; g++) {
      assertThat(text(redis.hget(new KeySchema("t", 2).meta(g), ascii("version"))))
          .isEqualTo(Integer.toString(KeySchema.STORED_VERSION));
    }
  }

  /** A group an earlier version created has no version, and opening it adds none. */
  @Test
  void open_groupOfAnEarlierVersion_keepsNoVersion() {
    open();
    redis.hdel(keys.meta(0), ascii("version"));
    open();
    assertThat(redis.hexists(keys.meta(0), ascii("version"))).isFalse();
  }

  @Test
  void apply_notesTheModelsKeyModeAndTheSegmentLimit() {
    PrefixIndex index = open(PrefixIndex.builder().segmentSlots(64));
    StreamId s = StreamId.of(MODEL, "a");
    StreamId t = StreamId.of("tok", "b");
    long before = serverMillis();
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 3), null, null)));
    index.apply(t, Events.mode(t), 0, lease(index, t), batch());

    Map<String, String> notes = notes(keys.meta(0));
    assertThat(notes).containsOnlyKeys("mode:engine:m", "mode:token:tok", "segment-slots:64");
    assertThat(Long.parseLong(notes.get("mode:engine:m"))).isBetween(before, serverMillis());
  }

  @Test
  void apply_afterRedisLostTheIndex_notesAgain() {
    PrefixIndex index = open();
    StreamId s = StreamId.of(MODEL, "a");
    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 3), null, null)));
    redis.flushall();
    index.checkIdentity();

    index.apply(s, Events.mode(s), 0, lease(index, s), batch(stored(hashes(1, 3), null, null)));

    assertThat(notes(keys.meta(0))).containsKey("mode:engine:m");
  }

  @Test
  void noteReaderKeys_writesOnlyTheRoutersNotesKey() {
    PrefixIndex index = open();
    index.noteReaderKeysAsync(MODEL, "engine:sha256_cbor:42:16").join();
    index.noteReaderKeysAsync(null, "token:16").join();

    assertThat(notes(keys.readerNotes()))
        .containsOnlyKeys("keys:engine:sha256_cbor:42:16|m", "keys:token:16|");
    assertThat(notes(keys.meta(0))).isEmpty();
  }

  /**
   * A hash's notes ({@code note:} fields) by name, each length-prefixed name decoded: {@code
   * mode:<mode>:<model>}, {@code segment-slots:<n>}, {@code keys:<keys>|<model>}; each to the time
   * it was noted.
   */
  private Map<String, String> notes(byte[] key) {
    Map<String, String> out = new TreeMap<>();
    redis
        .hgetall(key)
        .forEach(
            (f, v) -> {
              String name = new String(f, StandardCharsets.ISO_8859_1);
              if (name.startsWith("note:mode:")) {
                int at = name.indexOf(':', "note:mode:".length()) + 1;
                out.put(name.substring(5, at) + prefixed(f, at).get(0), text(v));
              } else if (name.startsWith("note:keys:")) {
                List<String> parts = prefixed(f, "note:keys:".length());
                out.put("keys:" + parts.get(0) + "|" + parts.get(1), text(v));
              } else if (name.startsWith("note:")) {
                out.put(name.substring(5), text(v));
              }
            });
    return out;
  }

  /** The length-prefixed UTF-8 strings of {@code field} from {@code at} on. */
  private static List<String> prefixed(byte[] field, int at) {
    List<String> out = new ArrayList<>();
    ByteBuffer b = ByteBuffer.wrap(field, at, field.length - at);
    while (b.hasRemaining()) {
      byte[] s = new byte[b.getInt()];
      b.get(s);
      out.add(new String(s, StandardCharsets.UTF_8));
    }
    return out;
  }

  private String slotOf(StreamId s) {
    String record = text(redis.hget(keys.streams(0), HashFields.streamField(s)));
    return record.substring(0, record.indexOf('|'));
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
